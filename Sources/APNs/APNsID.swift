/// The `apns-id` of a push (and the `apns-request-id` of broadcast and channel requests): a canonical
/// lower-case UUID, 8-4-4-4-12 hex digits. Setting our own lets the event report and the Push
/// Notifications Console name the same push.
public struct APNsID: Sendable, Hashable, CustomStringConvertible {
    public let text: String

    /// Accepts only the canonical lower-case form, which is what APNs documents (`BadMessageId` otherwise).
    public init(_ text: String, field: String = HeaderName.apnsID) throws(ValidationError) {
        guard APNsID.isCanonical(text) else {
            throw ValidationError(field: field,
                                  "'\(HeaderValueText.printable(text))' is not a lower-case UUID; use the form 123e4567-e89b-42d3-a456-426614174000",
                                  reason: .badMessageId)
        }
        self.text = text
    }

    /// A random (version 4) UUID from `generator`; tests pass a seeded generator to get a known ID.
    public static func random<Generator: RandomNumberGenerator>(using generator: inout Generator) -> APNsID {
        var bytes = [UInt8](repeating: 0, count: 16)
        for half in 0..<2 {
            let word = generator.next()
            for index in 0..<8 { bytes[half * 8 + index] = UInt8(truncatingIfNeeded: word >> (UInt64(index) * 8)) }
        }
        bytes[6] = (bytes[6] & 0x0f) | 0x40  // version 4
        bytes[8] = (bytes[8] & 0x3f) | 0x80  // RFC 4122 variant
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { out.append(UInt8(ascii: "-")) }
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0f)])
        }
        return APNsID(checked: String(decoding: out, as: UTF8.self))
    }

    /// A random UUID from the system's cryptographic generator.
    public static func random() -> APNsID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    private init(checked text: String) { self.text = text }

    public var description: String { text }

    private static func isCanonical(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count == 36 else { return false }
        for (index, byte) in utf8.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) else { return false }
            }
        }
        return true
    }
}
