import JSONCore
import Vocabulary

/// The send body for one group of phones, built once per group as `prefix + token + suffix`:
///
///     {"message":{"token":"<TOKEN>","data":{…},"android":{"priority":"HIGH","ttl":"60s","collapse_key":"…"},"notification":{…}}}
///
/// `token` comes first, so the prefix is the same constant for every group and the suffix is
/// everything after the token. A sender splices each phone's token between them into its own
/// buffer (`write(token:to:)`): no JSON, no allocation per message. Tokens are spliced as they are,
/// unescaped: FCM registration tokens are `[A-Za-z0-9_:-]` (`DeviceToken.isFCMRegistrationToken`,
/// checked when a token is registered), which JSON never escapes.
///
/// A TTL of whole seconds is written where the message is, not when the template is: a sender
/// passes what is left of its deadline to `write(token:ttlSeconds:to:)` and those digits replace
/// the template's (never more: a message held by the quota limiter for 40 s of a 120 s deadline
/// says `"ttl":"80s"`, so Google does not keep it past the deadline). The size check counts the
/// template's TTL, the widest any message of it can carry.
///
/// Checked once, here: data keys (not empty, not repeated, not reserved — `FCMDataKey`), the TTL
/// (`FCMDuration`), the collapse key, and the payload's size as FCM counts it (`FCMPayloadLimit`:
/// the data and notification texts, which no token changes), so no message of it is over FCM's limit.
public struct FCMMessageTemplate: Sendable, Equatable {
    /// `{"message":{"token":"`, the same for every template.
    public static let prefix: [UInt8] = Array(#"{"message":{"token":""#.utf8)
    /// Everything after the token.
    public let suffix: [UInt8]
    /// Where `suffix` holds the TTL's whole seconds and what they say; nil without a TTL, or with
    /// one that has a fraction (never rewritten).
    private let ttl: (digits: Range<Int>, seconds: Int64)?

    public static func == (a: FCMMessageTemplate, b: FCMMessageTemplate) -> Bool { a.suffix == b.suffix }

    public var prefix: [UInt8] { Self.prefix }

    public init(data: [(key: String, value: String)], android: FCMAndroidOptions, notification: FCMNotification? = nil) throws(FCMValidationError) {
        var seen: Set<String> = []
        for (key, _) in data {
            guard !key.isEmpty else { throw FCMValidationError(field: "message.data", "has an empty key") }
            guard seen.insert(key).inserted else { throw FCMValidationError(field: "message.data.\(key)", "is given twice; a data map has each key once") }
            guard !FCMDataKey.isReserved(key) else {
                throw FCMValidationError(field: "message.data.\(key)", "is reserved by FCM (from, notification, message_type, google.*, gcm.*); rename it")
            }
        }
        var writer = JSONWriter(reservingCapacity: 1024)
        writer.beginObject()  // the suffix is written as a fragment: the token's closing quote first
        if !data.isEmpty {
            writer.key("data"); writer.beginObject()
            for (key, value) in data { writer.key(key); writer.string(value) }
            writer.endObject()
        }
        writer.key("android"); writer.beginObject()
        writer.key("priority"); writer.string(android.priority.rawValue)
        var ttlAt: (at: Int, text: String)?
        if let ttl = android.ttl {
            writer.key("ttl")
            let text = try FCMDuration.ttl(ttl, field: "message.android.ttl")
            ttlAt = (writer.bytes.count + 1, text)  // past the opening quote
            writer.string(text)
        }
        if let collapseKey = android.collapseKey {
            guard !collapseKey.isEmpty else { throw FCMValidationError(field: "message.android.collapse_key", "is empty; omit it instead") }
            writer.key("collapse_key"); writer.string(collapseKey)
        }
        writer.endObject()
        if let notification, notification.title != nil || notification.body != nil {
            writer.key("notification"); writer.beginObject()
            if let title = notification.title { writer.key("title"); writer.string(title) }
            if let body = notification.body { writer.key("body"); writer.string(body) }
            writer.endObject()
        }
        writer.endObject()
        // `{"data":…}` → `","data":…}}`: close the token's string, continue the message object
        // (the fragment's own `}` closes it), then close the body.
        suffix = Array(#"","#.utf8) + writer.bytes.dropFirst() + [UInt8(ascii: "}")]
        // The suffix is the writer's bytes less their first, after two of its own: one byte on.
        if let ttlAt, let seconds = Int64(ttlAt.text.dropLast()) {
            let start = ttlAt.at + 1
            ttl = (start..<(start + ttlAt.text.count - 1), seconds)
        } else {
            ttl = nil
        }
        payloadCount = FCMPayloadLimit.count(data: data, notification: notification)
        try FCMPayloadLimit.check(payloadCount)
    }

    /// The message's payload as FCM counts it (`FCMPayloadLimit`): the same for every token.
    public let payloadCount: Int

    /// The longest body any token can make of it (a sender's buffer holds this).
    public var maximumBodyCount: Int { bodyCount(tokenByteCount: DeviceToken.fcmByteCount.upperBound) }

    /// The body's length for a token of `tokenByteCount` bytes.
    public func bodyCount(tokenByteCount: Int) -> Int { Self.prefix.count + tokenByteCount + suffix.count }

    /// Writes the body for `token` at the start of `buffer` (at least `bodyCount` bytes) and
    /// returns its length. `ttlSeconds`: what is left of the sender's deadline, in whole seconds;
    /// written as the TTL when the template has one of whole seconds and this is less.
    public func write(token: DeviceToken, ttlSeconds: Int64? = nil, to buffer: UnsafeMutableRawBufferPointer) -> Int {
        let count = bodyCount(tokenByteCount: token.count)
        precondition(buffer.count >= count, "the buffer holds \(buffer.count) bytes, the body needs \(count)")
        let base = buffer.baseAddress!
        Self.prefix.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        token.withBytes { base.advanced(by: Self.prefix.count).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        let at = Self.prefix.count + token.count
        guard let ttl, let left = ttlSeconds, left < ttl.seconds else {
            suffix.withUnsafeBytes { base.advanced(by: at).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            return count
        }
        return suffix.withUnsafeBytes { bytes -> Int in
            base.advanced(by: at).copyMemory(from: bytes.baseAddress!, byteCount: ttl.digits.lowerBound)
            // Decimal digits of a non-negative number, most significant first, no allocation.
            var value = max(0, left), digits = 1
            while value >= 10 { value /= 10; digits += 1 }
            value = max(0, left)
            for index in stride(from: digits - 1, through: 0, by: -1) {
                base.storeBytes(of: UInt8(ascii: "0") + UInt8(value % 10), toByteOffset: at + ttl.digits.lowerBound + index, as: UInt8.self)
                value /= 10
            }
            let rest = bytes.count - ttl.digits.upperBound
            base.advanced(by: at + ttl.digits.lowerBound + digits).copyMemory(from: bytes.baseAddress! + ttl.digits.upperBound, byteCount: rest)
            return at + ttl.digits.lowerBound + digits + rest
        }
    }

    /// The body for `token` as a new array (tests, one-off sends).
    public func body(token: DeviceToken, ttlSeconds: Int64? = nil) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: bodyCount(tokenByteCount: token.count)) { buffer, initialized in
            initialized = write(token: token, ttlSeconds: ttlSeconds, to: UnsafeMutableRawBufferPointer(buffer))
        }
    }
}
