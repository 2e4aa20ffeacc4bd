#if canImport(Glibc)
import Glibc
#endif
import Sender

/// A self-contained SVG (no scripts, no external fonts/files) with two panels: pushes over time and latency distribution.
/// Written by `sokuho bench --svg` (and `sokuho fanout --svg`) so a run can be looked at, or attached
/// to a report, without any other tool.
struct DeliveryChart {
    var title: String            // e.g. "sokuho fanout eew-20260823020000 serial 1"
    var subtitle: String         // e.g. "25000 targets · 24980 delivered · 3.2 s · 7800 pushes/s"
    var seriesLabel: String      // e.g. "delivered" or "answered"
    var overTime: [(seconds: Double, count: Int)]  // cumulative count sampled over time, ascending seconds
    var latency: LatencyHistogram

    /// The canvas, and the plot areas of the two panels inside it (axis labels go in the margins).
    private static let width = 1000.0, height = 440.0
    private static let leftPanel = Frame(left: 80, top: 100, width: 380, height: 270)
    private static let rightPanel = Frame(left: 580, top: 100, width: 380, height: 270)
    private static let lineColour = "#1f77b4", barColour = "#4c9f70", markerColour = "#d62728"
    /// A white outline behind a label, so it stays readable where it crosses a line or a bar.
    private static let halo = #"stroke="white" stroke-width="3" paint-order="stroke""#

    func svg() -> String {
        var out = SVGWriter()
        out.raw(#"<?xml version="1.0" encoding="UTF-8"?>"#)
        out.raw(#"<svg xmlns="http://www.w3.org/2000/svg" width="\#(Int(Self.width))" height="\#(Int(Self.height))" "#
            + #"viewBox="0 0 \#(Int(Self.width)) \#(Int(Self.height))" font-family="sans-serif" font-size="12">"#)
        out.element("title", title)
        out.raw(#"<rect width="100%" height="100%" fill="white"/>"#)
        out.text(title, x: 24, y: 32, attributes: #"font-size="18" font-weight="bold""#)
        out.text(subtitle, x: 24, y: 56, attributes: #"font-size="13" fill="dimgray""#)
        drawOverTime(&out, in: Self.leftPanel)
        drawLatency(&out, in: Self.rightPanel)
        out.raw("</svg>")
        return out.text
    }

    /// Writes `svg()` to `path`, replacing what was there.
    func write(to path: String) throws(CLIError) {
        let bytes = Array(svg().utf8)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CLIError(.cantCreate, "cannot create the chart \(path): \(String(cString: strerror(errno)))") }
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress.map { $0 + offset }, $0.count - offset) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let reason = String(cString: strerror(errno))
                close(fd)
                throw CLIError(.ioError, "writing the chart \(path) failed: \(reason)")
            }
            offset += count
        }
        // close reports late write errors (a full disk on NFS); a chart cut short must not pass as written.
        guard close(fd) == 0 else { throw CLIError(.ioError, "writing the chart \(path) failed: \(String(cString: strerror(errno)))") }
    }

    // MARK: Left panel: cumulative count over time

    private func drawOverTime(_ out: inout SVGWriter, in frame: Frame) {
        out.text("\(seriesLabel) over time", x: frame.left, y: frame.top - 16, attributes: #"font-size="14" font-weight="bold""#)
        // A NaN or negative time would put the line off the canvas (or trap in the number formatting).
        var points = overTime.filter { $0.seconds.isFinite && $0.seconds >= 0 }.map { (seconds: $0.seconds, count: max(0, $0.count)) }
        guard let last = points.last else { return out.noData(in: frame) }
        // Nothing has happened at the start: anchoring the line there shows how long the first answers took.
        if points[0].seconds > 0 { points.insert((0, 0), at: 0) }

        let xTicks = Self.linearTicks(upTo: points.map(\.seconds).max() ?? 0)
        let yTicks = Self.linearTicks(upTo: Double(points.map(\.count).max() ?? 0), wholeNumbers: true)
        let xAxis = Axis(low: 0, high: xTicks.last ?? 1, logarithmic: false)
        let yAxis = Axis(low: 0, high: yTicks.last ?? 1, logarithmic: false)
        out.axes(in: frame, x: xAxis, xTicks: xTicks, xLabel: "seconds", y: yAxis, yTicks: yTicks, yLabel: "\(seriesLabel) (cumulative)")

        let coordinates = points.map { "\(Self.number(frame.x($0.seconds, on: xAxis), digits: 1)),\(Self.number(frame.y(Double($0.count), on: yAxis), digits: 1))" }
        out.raw(#"<polyline fill="none" stroke="\#(Self.lineColour)" stroke-width="2" points="\#(coordinates.joined(separator: " "))"/>"#)
        // A dot at the last sample, so a run with one sample (or no duration) still shows where it ended.
        let endX = frame.x(last.seconds, on: xAxis), endY = frame.y(Double(last.count), on: yAxis)
        out.raw(#"<circle cx="\#(Self.number(endX, digits: 1))" cy="\#(Self.number(endY, digits: 1))" r="3.5" fill="\#(Self.lineColour)"/>"#)
        // Top left, which a rising cumulative line leaves empty.
        out.text("\(last.count) \(seriesLabel) at \(Self.number(last.seconds, digits: 2)) s", x: frame.left + 8, y: frame.top + 18,
                 attributes: #"fill="\#(Self.lineColour)" \#(Self.halo)"#)
    }

    // MARK: Right panel: latency histogram on a log axis

    private func drawLatency(_ out: inout SVGWriter, in frame: Frame) {
        out.text("latency distribution", x: frame.left, y: frame.top - 16, attributes: #"font-size="14" font-weight="bold""#)
        let buckets = latency.distribution()
        guard !buckets.isEmpty else { return out.noData(in: frame) }
        // A bucket reaches down to the one before it; the first reaches down by the same ratio as the
        // others. One bucket (every latency alike) gets a narrow bar around its value.
        let ratio = buckets.count > 1 ? buckets[1].upperMilliseconds / buckets[0].upperMilliseconds : 1.15
        let bars = buckets.indices.map { index -> (lower: Double, upper: Double, count: Int) in
            let upper = buckets[index].upperMilliseconds
            if buckets.count == 1 { return (upper / ratio, upper * ratio, buckets[index].count) }
            return (index == 0 ? upper / ratio : buckets[index - 1].upperMilliseconds, upper, buckets[index].count)
        }
        let (xTicks, xAxis) = Self.logTicks(from: bars[0].lower, to: bars[bars.count - 1].upper)
        let yTicks = Self.linearTicks(upTo: Double(bars.map(\.count).max() ?? 0), wholeNumbers: true)
        let yAxis = Axis(low: 0, high: yTicks.last ?? 1, logarithmic: false)
        out.axes(in: frame, x: xAxis, xTicks: xTicks, xLabel: "latency (ms, log scale)", y: yAxis, yTicks: yTicks, yLabel: "pushes")

        for bar in bars where bar.count > 0 {
            // At least 1.5 px tall: a handful of outliers next to thousands of pushes must still show.
            let left = frame.x(bar.lower, on: xAxis), right = frame.x(bar.upper, on: xAxis)
            let top = min(frame.bottom - 1.5, frame.y(Double(bar.count), on: yAxis))
            out.raw(#"<rect class="bar" x="\#(Self.number(left, digits: 1))" y="\#(Self.number(top, digits: 1))" "#
                + #"width="\#(Self.number(max(1, right - left - 0.5), digits: 1))" height="\#(Self.number(frame.bottom - top, digits: 1))" fill="\#(Self.barColour)">"#)
            out.element("title", "\(Self.milliseconds(bar.lower))–\(Self.milliseconds(bar.upper)) ms: \(bar.count) pushes")
            out.raw("</rect>")
        }
        // Markers after the bars so they are drawn on top; two label rows so close percentiles stay readable.
        for (row, (name, fraction)) in [("p50", 0.5), ("p99", 0.99)].enumerated() {
            let value = latency.percentile(fraction)
            let x = frame.x(value, on: xAxis)
            out.raw(#"<line x1="\#(Self.number(x, digits: 1))" y1="\#(Self.number(frame.top, digits: 1))" x2="\#(Self.number(x, digits: 1))" "#
                + #"y2="\#(Self.number(frame.bottom, digits: 1))" stroke="\#(Self.markerColour)" stroke-dasharray="4 3"/>"#)
            let anchor = x > frame.left + frame.width / 2 ? "end" : "start"
            out.text("\(name) \(Self.milliseconds(value)) ms", x: x + (anchor == "end" ? -4 : 4), y: frame.top + 12 + 14 * Double(row),
                     attributes: #"text-anchor="\#(anchor)" fill="\#(Self.markerColour)" \#(Self.halo)"#)
        }
    }

    // MARK: Scales

    /// Round tick values, 1, 2 or 5 × 10ⁿ apart, from 0 up to the first at or above `maximum`.
    static func linearTicks(upTo maximum: Double, wholeNumbers: Bool = false) -> [Double] {
        // No data or no duration still gets an axis, 0…1.
        let top = maximum > 0 ? maximum : 1
        let rough = top / 5
        let magnitude = pow(10, (log10(rough)).rounded(.down))
        var step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= rough * (1 - 1e-9) } ?? 10 * magnitude
        // Counts are whole: a tick at 0.2 pushes would be noise.
        if wholeNumbers { step = max(step, 1) }
        let steps = Int((top / step - 1e-9).rounded(.up))
        return (0...max(1, steps)).map { Double($0) * step }
    }

    /// Decade ticks (with 2 and 5 in between when the range is two decades or less) spanning
    /// `low…high` milliseconds, and the axis from the decade below `low` to the decade above `high`.
    private static func logTicks(from low: Double, to high: Double) -> ([Double], Axis) {
        let bottom = Int(log10(low).rounded(.down))
        var top = Int(log10(high).rounded(.up))
        if top <= bottom { top = bottom + 1 }
        var ticks: [Double] = []
        for decade in bottom...top {
            let base = pow(10, Double(decade))
            ticks.append(base)
            if top - bottom <= 2 && decade < top { ticks += [2 * base, 5 * base] }
        }
        return (ticks, Axis(low: pow(10, Double(bottom)), high: pow(10, Double(top)), logarithmic: true))
    }

    // MARK: Text

    /// `value` with up to `digits` decimals, without trailing zeros ("0.2", "15", "0.05").
    static func number(_ value: Double, digits: Int) -> String {
        var text = BenchCommand.fixed(value, digits)
        if text.contains(".") {
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
        }
        return text
    }

    /// A latency for a label: to the microsecond below 1 ms (loopback answers), whole milliseconds from 10 ms.
    static func milliseconds(_ value: Double) -> String { number(value, digits: value < 1 ? 3 : (value < 10 ? 2 : 0)) }

    /// `text` safe inside an XML element or a double-quoted attribute.
    static func escaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t", "\n", "\r": out.unicodeScalars.append(scalar)
            // XML 1.0 forbids the other control characters even as references: a parser would reject the file.
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF: out += "\u{FFFD}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

/// One axis's value range; values map linearly, or linearly in their logarithm.
private struct Axis {
    var low: Double
    var high: Double
    var logarithmic: Bool

    /// Where `value` lies along the axis, 0 at `low` and 1 at `high` (clamped, so nothing leaves its panel).
    func fraction(_ value: Double) -> Double {
        let raw = logarithmic ? log(max(value, low) / low) / log(high / low) : (value - low) / (high - low)
        return raw.isFinite ? min(1, max(0, raw)) : 0
    }
}

/// A plot area in canvas coordinates (y grows downwards, as in SVG).
private struct Frame {
    var left: Double
    var top: Double
    var width: Double
    var height: Double
    var bottom: Double { top + height }

    func x(_ value: Double, on axis: Axis) -> Double { left + axis.fraction(value) * width }
    func y(_ value: Double, on axis: Axis) -> Double { bottom - axis.fraction(value) * height }
}

/// Builds the SVG text; everything that came from outside goes through `DeliveryChart.escaped`.
private struct SVGWriter {
    private(set) var text = ""

    mutating func raw(_ markup: String) { text += markup + "\n" }

    mutating func element(_ name: String, _ content: String) { raw("<\(name)>\(DeliveryChart.escaped(content))</\(name)>") }

    mutating func text(_ content: String, x: Double, y: Double, attributes: String = "") {
        raw(#"<text x="\#(DeliveryChart.number(x, digits: 1))" y="\#(DeliveryChart.number(y, digits: 1))" \#(attributes)>\#(DeliveryChart.escaped(content))</text>"#)
    }

    /// The panel's frame with a note in the middle, for a run with nothing to plot.
    mutating func noData(in frame: Frame) {
        frameBox(frame)
        text("no pushes", x: frame.left + frame.width / 2, y: frame.top + frame.height / 2,
             attributes: #"text-anchor="middle" font-size="14" fill="gray""#)
    }

    /// Grid lines, tick labels and axis titles of one panel.
    mutating func axes(in frame: Frame, x: Axis, xTicks: [Double], xLabel: String, y: Axis, yTicks: [Double], yLabel: String) {
        frameBox(frame)
        let decimals = { (ticks: [Double]) in ticks.count > 1 ? max(0, Int((-log10(ticks[1] - ticks[0])).rounded(.up))) : 0 }
        let xDigits = x.logarithmic ? 3 : decimals(xTicks), yDigits = decimals(yTicks)
        for tick in xTicks {
            let position = frame.x(tick, on: x)
            raw(#"<line x1="\#(n(position))" y1="\#(n(frame.top))" x2="\#(n(position))" y2="\#(n(frame.bottom + 4))" stroke="gainsboro"/>"#)
            text(DeliveryChart.number(tick, digits: xDigits), x: position, y: frame.bottom + 18, attributes: #"text-anchor="middle""#)
        }
        for tick in yTicks {
            let position = frame.y(tick, on: y)
            raw(#"<line x1="\#(n(frame.left - 4))" y1="\#(n(position))" x2="\#(n(frame.left + frame.width))" y2="\#(n(position))" stroke="gainsboro"/>"#)
            text(DeliveryChart.number(tick, digits: yDigits), x: frame.left - 8, y: position + 4, attributes: #"text-anchor="end""#)
        }
        text(xLabel, x: frame.left + frame.width / 2, y: frame.bottom + 40, attributes: #"text-anchor="middle""#)
        let labelX = frame.left - 58, labelY = frame.top + frame.height / 2
        text(yLabel, x: labelX, y: labelY, attributes: #"text-anchor="middle" transform="rotate(-90 \#(n(labelX)) \#(n(labelY)))""#)
    }

    private mutating func frameBox(_ frame: Frame) {
        raw(#"<rect x="\#(n(frame.left))" y="\#(n(frame.top))" width="\#(n(frame.width))" height="\#(n(frame.height))" fill="none" stroke="darkgray"/>"#)
    }

    private func n(_ value: Double) -> String { DeliveryChart.number(value, digits: 1) }
}
