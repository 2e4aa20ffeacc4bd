#if canImport(Glibc)
import Glibc
#endif
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
        if known, let (token, restStart) = split,
           body.count - restStart == rest.count, Self.equal(body, from: restStart, rest) {
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
        body.withUnsafeBytes { bytes -> (token: String, restStart: Int)? in
            let start = opening.count
            guard bytes.count > start, opening.withUnsafeBytes({ memcmp(bytes.baseAddress!, $0.baseAddress!, start) == 0 }),
                  let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
            let token = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            guard DeviceToken.isFCMRegistrationToken(bytes: token) else { return nil }
            return (String(decoding: token, as: UTF8.self), end)
        }
    }

    /// Whether `body` from `start` on is byte for byte `rest` (whose size the caller checked).
    private static func equal(_ body: [UInt8], from start: Int, _ rest: [UInt8]) -> Bool {
        body.withUnsafeBytes { bytes in
            rest.withUnsafeBytes { $0.isEmpty || memcmp(bytes.baseAddress! + start, $0.baseAddress!, $0.count) == 0 }
        }
    }
}
