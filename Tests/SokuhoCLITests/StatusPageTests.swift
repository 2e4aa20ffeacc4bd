@testable import Daemon
import DaemonConfiguration
import Runtime
import Testing

/// The status page's pieces that need no daemon: escaping (an event key or a halt message is
/// anyone's text, the page must not run it) and the sparkline's geometry.
@Suite struct StatusPageTests {
    @Test func everyHTMLSpecialCharacterIsEscaped() {
        #expect(StatusPage.escape(#"<script>alert("x&y")</script>'"#)
                == "&lt;script&gt;alert(&quot;x&amp;y&quot;)&lt;/script&gt;&#39;")
        #expect(StatusPage.escape("震度7 eew-1") == "震度7 eew-1")
    }

    @Test func numbersAreWrittenWithFixedDecimals() {
        #expect(StatusPage.fixed(0.05, digits: 2) == "0.05")
        #expect(StatusPage.fixed(3.14159, digits: 1) == "3.1")
        #expect(StatusPage.fixed(-2.5, digits: 2) == "-2.50")
        #expect(StatusPage.fixed(12, digits: 0) == "12")
        #expect(StatusPage.fixed(.nan, digits: 1) == "0")
    }

    @Test func theSparklineRunsFromTheStartToTheLastSampleScaledToTheTargets() {
        let svg = StatusPage.sparkline([(seconds: 1, count: 50), (seconds: 2, count: 100)], targets: 100, label: "k<1>")
        #expect(svg.hasPrefix("<svg") && svg.hasSuffix("</svg>"))
        #expect(svg.contains("<title>k&lt;1&gt;: delivered over time</title>"))
        // (0, bottom) → half-way across at half height → the top-right corner's inner edge.
        #expect(svg.contains(#"points="0.0,32.0 80.0,16.0 159.0,1.0""#), "\(svg)")
        // Nothing delivered yet: a frame without a line, not a division by zero.
        #expect(!StatusPage.sparkline([], targets: 10, label: "k").contains("polyline"))
    }
}
