import Vocabulary

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
        return APNsID(checked: UUIDText.version4(bytes))
    }

    /// A random UUID from the system's cryptographic generator.
    public static func random() -> APNsID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    private init(checked text: String) { self.text = text }

    public var description: String { text }

    /// 8-4-4-4-12 hex digits with no upper-case letter.
    private static func isCanonical(_ text: String) -> Bool {
        let letters = UUIDText.letters(text.utf8)
        return letters == .digitsOnly || letters == .lowercase
    }
}
