/// The `apns-collapse-id` header: pushes with the same ID replace one another on the device. APNs
/// refuses more than 64 bytes (`BadCollapseId`); the limit is in UTF-8 bytes, not characters.
public struct CollapseID: Sendable, Hashable, CustomStringConvertible {
    public static let maximumBytes = 64

    public let text: String

    public init(_ text: String) throws(ValidationError) {
        try HeaderValueText.check(text, field: HeaderName.collapseID, allowed: { $0 >= 0x20 && $0 != 0x7f },
                                  expected: "a short ID without control characters", reason: .badCollapseId)
        let size = text.utf8.count
        guard size <= CollapseID.maximumBytes else {
            throw ValidationError(field: HeaderName.collapseID,
                                  "is \(size) bytes; APNs allows at most \(CollapseID.maximumBytes) bytes, so shorten it",
                                  reason: .badCollapseId)
        }
        self.text = text
    }

    public var description: String { text }
}
