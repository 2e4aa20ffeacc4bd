import Runtime
import Testing

/// The exposition's escaping, per Unicode scalar (issue 24): a label value from the outside world
/// (an APNs reason, an app name) can neither end a line nor a label, and Prometheus' own linter
/// reads the result.
@Suite struct PrometheusTextTests {
    @Test func aCarriageReturnNewlineAndAQuoteWithACombiningMarkAreEscapedNotPassedThrough() {
        #expect(PrometheusText.escapeLabel("a\r\nb") == "a\u{FFFD}\\nb")
        #expect(PrometheusText.escapeLabel("\"\u{301}x") == "\\\"\u{301}x")
        #expect(PrometheusText.escapeLabel("back\\slash\u{7F}") == "back\\\\slash\u{FFFD}")
        #expect(PrometheusText.escapeHelp("say \"hi\"\r\n") == "say \"hi\"\u{FFFD}\\n")
    }

    @Test func promtoolAcceptsSamplesWhoseLabelsCarryHostileText() {
        var text = PrometheusText()
        text.family("sokuho_test_total", .counter, help: "A test family with \"quotes\"\r\nand a new line.")
        for value in ["plain", "a\r\nb", "\"\u{301}", "tab\there", "back\\slash", "日本語"] {
            text.sample("sokuho_test_total", [("reason", value)], 1)
        }
        let fixture = CLIFixture()
        let path = fixture.file("metrics.txt", text.text)
        #expect(CLIFixture.shell("promtool check metrics < '\(path)' > '\(path).out' 2>&1") == 0, "\(text.text)")
        #expect(text.text.split(separator: "\n").count == 2 + 6, "one line per sample: \(text.text)")
    }
}
