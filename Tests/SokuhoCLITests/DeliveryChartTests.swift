import Glibc
import Sender
import Testing
@testable import SokuhoCLI

/// The `--svg` chart: a file a browser opens as is, so it must be well-formed XML whatever the data
/// or the text put in it.
@Suite struct DeliveryChartTests {
    func chart(title: String = "sokuho fanout eew-20260823020000 serial 1", overTime: [(seconds: Double, count: Int)],
               latenciesMs: [Double]) -> DeliveryChart {
        var latency = LatencyHistogram()
        for ms in latenciesMs { latency.record(nanoseconds: UInt64(ms * 1_000_000)) }
        return DeliveryChart(title: title, subtitle: "25000 targets · 24980 delivered · 3.2 s · 7800 pushes/s",
                             seriesLabel: "delivered", overTime: overTime, latency: latency)
    }

    /// Whether an independent XML parser (Python's) accepts `svg`, and nothing in it is NaN or infinite.
    func isWellFormed(_ svg: String, _ fixture: CLIFixture) -> Bool {
        let path = fixture.file("chart.svg", svg)
        let parsed = CLIFixture.shell("python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' '\(path)'") == 0
        return parsed && !svg.contains("nan") && !svg.contains("inf")
    }

    func count(_ needle: String, in text: String) -> Int { text.split(separator: needle, omittingEmptySubsequences: false).count - 1 }

    @Test("a chart of a run is well-formed XML with its title, both axis labels and one bar per non-empty latency bucket")
    func aRunsChartHasTitleAxesAndBars() {
        let fixture = CLIFixture()
        let latencies = (1...500).map { Double($0 % 50) + 0.4 } + [250, 900]
        let chart = chart(overTime: [(0.2, 4000), (0.4, 11000), (0.6, 19000), (0.8, 24980)], latenciesMs: latencies)
        let svg = chart.svg()
        #expect(isWellFormed(svg, fixture), "\(svg)")
        #expect(svg.contains("sokuho fanout eew-20260823020000 serial 1") && svg.contains("24980 delivered"))
        #expect(svg.contains(">seconds<") && svg.contains(">delivered (cumulative)<"))
        #expect(svg.contains(">latency (ms, log scale)<") && svg.contains(">pushes<"))
        let nonEmpty = chart.latency.distribution().filter { $0.count > 0 }.count
        #expect(nonEmpty > 1)
        #expect(count(#"class="bar""#, in: svg) == nonEmpty)
        #expect(svg.contains(">p50 ") && svg.contains(">p99 "))
        #expect(!svg.contains("<script") && !svg.contains("href"), "self-contained: nothing to run or fetch")
    }

    @Test("text with <, & and \" is escaped, so a title cannot break the SVG")
    func markupInTextIsEscaped() {
        let fixture = CLIFixture()
        var chart = chart(title: #"<b>"R&D" 'test'</b>"#, overTime: [(1, 10)], latenciesMs: [3])
        chart.seriesLabel = "a<b & \"c\""
        chart.subtitle = "control \u{1} character"
        let svg = chart.svg()
        #expect(isWellFormed(svg, fixture), "\(svg)")
        #expect(svg.contains("&lt;b&gt;&quot;R&amp;D&quot; &apos;test&apos;&lt;/b&gt;"))
        #expect(svg.contains("a&lt;b &amp; &quot;c&quot;"))
        #expect(!svg.contains("<b>") && !svg.contains("\u{1}"))
    }

    @Test("a run with nothing to plot still gives a valid SVG that says no pushes")
    func emptyDataSaysNoPushes() {
        let fixture = CLIFixture()
        let svg = chart(overTime: [], latenciesMs: []).svg()
        #expect(isWellFormed(svg, fixture), "\(svg)")
        #expect(count(">no pushes<", in: svg) == 2, "\(svg)")
        #expect(!svg.contains(#"class="bar""#))
    }

    @Test("one sample, a run of zero seconds and latencies all alike still give a valid chart with one bar",
          arguments: [[(seconds: 0.0, count: 3)], [(seconds: 0.0, count: 0), (seconds: 0.0, count: 3)], [(seconds: 2.5, count: 3)]])
    func edgeCasesStillPlot(overTime: [(seconds: Double, count: Int)]) {
        let fixture = CLIFixture()
        let svg = chart(overTime: overTime, latenciesMs: [7, 7, 7]).svg()
        #expect(isWellFormed(svg, fixture), "\(svg)")
        #expect(count(#"class="bar""#, in: svg) == 1, "\(svg)")
        #expect(svg.contains("<polyline") && svg.contains("<circle"))
        #expect(svg.contains(">3 delivered at "))
    }

    @Test("axis ticks are round numbers 1, 2 or 5 × 10ⁿ apart, from 0 to at least the largest value")
    func ticksAreRound() {
        #expect(DeliveryChart.linearTicks(upTo: 24980, wholeNumbers: true) == [0, 5000, 10000, 15000, 20000, 25000])
        #expect(DeliveryChart.linearTicks(upTo: 3.2) == [0, 1, 2, 3, 4])
        #expect(DeliveryChart.linearTicks(upTo: 0.7).last.map { $0 >= 0.7 && $0 < 0.81 } == true)
        let unit = DeliveryChart.linearTicks(upTo: 0)
        #expect(unit.count == 6 && unit.last == 1, "no duration still gets a 0…1 axis: \(unit)")
        #expect(DeliveryChart.linearTicks(upTo: 1, wholeNumbers: true) == [0, 1])
    }

    @Test("writing to a path that cannot be created fails with exit 73 and names the path")
    func unwritablePathIsNamed() {
        let path = "/nonexistent-directory/chart.svg"
        do {
            try chart(overTime: [(1, 1)], latenciesMs: [1]).write(to: path)
            Issue.record("writing to \(path) succeeded")
        } catch {
            #expect(error.code == .cantCreate)
            #expect(error.message.contains(path), "\(error.message)")
        }
    }

    @Test("the chart written to a file is the SVG, whole")
    func writeWritesTheSVG() throws {
        let fixture = CLIFixture()
        let chart = chart(overTime: [(1, 1)], latenciesMs: [1])
        let path = fixture.directory + "/written.svg"
        try chart.write(to: path)
        #expect(CLIFixture.readFile(path) == chart.svg())
    }
}
