import APNs
import JSONCore

/// Writes the lines `TokenLineParser` reads, in a fixed member order, so export → import →
/// export gives the same bytes. `minLevel` is always written, and `registeredAt` whenever the
/// time is known (an export always knows it; `tokens generate` does not).
public enum TokenLineWriter {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends one line (with its newline) for `installation`'s token of `kind`, registered at
    /// `registeredAt` (ms since 1970), to `out`.
    public static func append(_ installation: Installation, kind: TokenKind, registeredAt: UInt64?, to out: inout [UInt8]) {
        guard let token = installation.token(kind) else { return }
        out.append(contentsOf: "{\"installationId\":".utf8)
        JSONWriter.appendQuoted(installation.id, to: &out)
        out.append(contentsOf: ",\"app\":".utf8)
        JSONWriter.appendQuoted(installation.app, to: &out)
        out.append(contentsOf: ",\"environment\":\"".utf8)
        out.append(contentsOf: installation.environment.name.utf8)
        out.append(contentsOf: "\",\"kind\":\"".utf8)
        out.append(contentsOf: kind.name.utf8)
        out.append(contentsOf: "\",\"token\":\"".utf8)
        for byte in token {
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0x0f)])
        }
        out.append(UInt8(ascii: "\""))
        if let registeredAt {
            out.append(contentsOf: ",\"registeredAt\":".utf8)
            out.append(contentsOf: String(registeredAt).utf8)
        }
        out.append(contentsOf: ",\"topics\":[".utf8)
        for (index, topic) in installation.topics(kind).enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(contentsOf: "{\"name\":".utf8)
            JSONWriter.appendQuoted(topic.name, to: &out)
            out.append(contentsOf: ",\"minLevel\":".utf8)
            out.append(contentsOf: String(topic.minLevel).utf8)
            out.append(UInt8(ascii: "}"))
        }
        out.append(contentsOf: "]}\n".utf8)
    }
}
