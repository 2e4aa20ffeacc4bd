/// Writes the Prometheus text exposition format (version 0.0.4): `# HELP`, `# TYPE`, then one
/// sample per line with its labels. Values are rendered the way Prometheus parses them; label
/// values are escaped (backslash, double quote, newline).
public struct PrometheusText {
    public private(set) var text = ""

    public init() {}

    public enum Kind: String { case counter, gauge, histogram }

    /// Starts a metric family.
    public mutating func family(_ name: String, _ kind: Kind, help: String) {
        text += "# HELP \(name) \(Self.escapeHelp(help))\n# TYPE \(name) \(kind.rawValue)\n"
    }

    public mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(Self.escapeLabel($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + Self.format(value) + "\n"
    }

    public mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Int) {
        sample(name, labels, Double(value))
    }

    /// A histogram from cumulative counts at upper bounds (seconds), plus sum and count.
    public mutating func histogram(_ name: String, _ labels: [(String, String)] = [], buckets: [(upperBound: Double, cumulative: Int)],
                                   sum: Double, count: Int) {
        for bucket in buckets {
            sample(name + "_bucket", labels + [("le", Self.format(bucket.upperBound))], bucket.cumulative)
        }
        sample(name + "_bucket", labels + [("le", "+Inf")], count)
        sample(name + "_sum", labels, sum)
        sample(name + "_count", labels, count)
    }

    package static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }

    /// A label value escapes backslash, double quote and newline; HELP text backslash and newline.
    package static func escapeLabel(_ value: String) -> String { escape(value, quote: true) }
    package static func escapeHelp(_ value: String) -> String { escape(value, quote: false) }

    /// Per Unicode scalar, not per `Character`: "\r\n" is one Character, and so is a quote
    /// followed by a combining mark — matched as Characters they passed unescaped and broke the
    /// line or the label. The format escapes only backslash, quote and newline; any other control
    /// character (a carriage return above all) becomes U+FFFD rather than a raw byte a scraper
    /// may read as the end of the line.
    private static func escape(_ value: String, quote: Bool) -> String {
        var out = String.UnicodeScalarView()
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\\": out.append(contentsOf: "\\\\".unicodeScalars)
            case "\"" where quote: out.append(contentsOf: "\\\"".unicodeScalars)
            case "\n": out.append(contentsOf: "\\n".unicodeScalars)
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: out.append("\u{FFFD}")
            default: out.append(scalar)
            }
        }
        return String(out)
    }
}
