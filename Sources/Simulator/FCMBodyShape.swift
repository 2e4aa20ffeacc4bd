import FCM
import Vocabulary

/// The simulator's shortcut for what a sender's group sends: bodies that differ only in their
/// token (`{"message":{"token":"<token>` + the same rest). The first is checked whole by
/// `FCMMessageRules`; a later one whose rest is byte-for-byte the checked one's, and whose token
/// is plain registration-token text, gets the same verdict with its own token — the rest cannot
/// judge differently, and a token with any other byte (an escape, a quote) is checked whole. So
/// the simulator answers as before at a fraction of the cost: it parsed every message, which
/// made it, not the sender, the bound of `bench --provider fcm` (the APNs side caches its
/// payload check the same way). One per connection handler: no lock.
struct FCMBodyShape {
    private static let opening = Array(#"{"message":{"token":""#.utf8)
    /// The rest after the token of the last body checked whole with a token there, and its verdict.
    private var rest: [UInt8] = []
    private var validateOnly = false
    private var known = false

    mutating func check(_ body: [UInt8]) throws(FCMRefusal) -> FCMMessageRules.Send {
        let split = Self.split(body)
        if known, let (token, restStart) = split, body.count <= FCMPayloadLimit.maximumBytes,
           body.count - restStart == rest.count, body[restStart...].elementsEqual(rest) {
            return FCMMessageRules.Send(token: token, validateOnly: validateOnly)
        }
        let send = try FCMMessageRules.check(body)
        if let (token, restStart) = split, send.token == token {
            rest = Array(body[restStart...])
            validateOnly = send.validateOnly
            known = true
        }
        return send
    }

    /// The token and where the rest starts, when the body opens with the token and the token is
    /// plain registration-token text (nothing JSON would unescape).
    private static func split(_ body: [UInt8]) -> (token: String, restStart: Int)? {
        guard body.count > opening.count, body.starts(with: opening),
              let end = body[opening.count...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        let token = String(decoding: body[opening.count..<end], as: UTF8.self)
        guard DeviceToken.isFCMRegistrationToken(token) else { return nil }
        return (token, end)
    }
}
