import APNs
import JSONCore
import Vocabulary

/// Writes the lines `TokenLineParser` reads, in a fixed member order, so export → import →
/// export gives the same bytes. `minLevel` is always written, `registeredAt` whenever the time is
/// known (an export always knows it; `tokens generate` does not), and `broadcast` only when true:
/// an absent field imports as "keep", which for a new installation is false. An fcm token is
/// written as its text, every other as hex (see `TokenLineParser`).
public enum TokenLineWriter {
    /// Appends one line (with its newline) for `installation`'s token of `kind`, registered at
    /// `registeredAt` (ms since 1970), to `out`.
    public static func append(_ installation: Installation, kind: TokenKind, registeredAt: UInt64?, to out: inout [UInt8]) {
        guard let token = installation.token(kind) else { return }
        out.append(contentsOf: "{\"installationId\":".utf8)
        JSONWriter.appendQuoted(installation.id, to: &out)
        appendPlace(app: installation.app, environment: installation.environment, to: &out)
        out.append(contentsOf: ",\"kind\":\"".utf8)
        out.append(contentsOf: kind.name.utf8)
        out.append(UInt8(ascii: "\""))
        if kind == .fcm {
            // Its own text: `[A-Za-z0-9_:-]` needs no JSON escape (the store checked it).
            out.append(contentsOf: ",\"token\":\"".utf8)
            out.append(contentsOf: token)
            out.append(UInt8(ascii: "\""))
        } else {
            appendToken(token, to: &out)
        }
        if let registeredAt {
            out.append(contentsOf: ",\"registeredAt\":".utf8)
            out.append(contentsOf: String(registeredAt).utf8)
        }
        if installation.broadcast { out.append(contentsOf: ",\"broadcast\":true".utf8) }
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

    /// Appends one activity line (with its newline) to `out`. `expiresAt` is not written: an
    /// import sets it 8 hours after `startedAt`, as `activities register` does.
    public static func append(_ activity: ActivityRecord, to out: inout [UInt8]) {
        out.append(contentsOf: "{\"activityId\":".utf8)
        JSONWriter.appendQuoted(activity.id, to: &out)
        appendPlace(app: activity.app, environment: activity.environment, to: &out)
        out.append(contentsOf: ",\"eventKey\":".utf8)
        JSONWriter.appendQuoted(activity.eventKey, to: &out)
        if let topic = activity.topic {
            out.append(contentsOf: ",\"topic\":".utf8)
            JSONWriter.appendQuoted(topic, to: &out)
        }
        appendToken(activity.updateToken, to: &out)
        out.append(contentsOf: ",\"startedAt\":".utf8)
        out.append(contentsOf: String(activity.startedAt).utf8)
        out.append(contentsOf: "}\n".utf8)
    }

    /// `,"app":…,"environment":"…"`: both line shapes carry them.
    private static func appendPlace(app: String, environment: Environment, to out: inout [UInt8]) {
        out.append(contentsOf: ",\"app\":".utf8)
        JSONWriter.appendQuoted(app, to: &out)
        out.append(contentsOf: ",\"environment\":\"".utf8)
        out.append(contentsOf: environment.name.utf8)
        out.append(UInt8(ascii: "\""))
    }

    /// `,"token":"<hex>"`.
    private static func appendToken(_ token: [UInt8], to out: inout [UInt8]) {
        out.append(contentsOf: ",\"token\":\"".utf8)
        Hex.append(contentsOf: token, to: &out)
        out.append(UInt8(ascii: "\""))
    }
}
