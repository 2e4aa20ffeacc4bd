/// An app's bundle ID (`com.example.quake`), the root of every `apns-topic` and of the broadcast and
/// channel-management paths. Apple allows letters, digits, `-` and `.`; anything else would corrupt a
/// header or a `:path`, so it is refused before it gets there.
public struct BundleID: Sendable, Hashable, CustomStringConvertible {
    public let text: String

    public init(_ text: String) throws(ValidationError) {
        try HeaderValueText.check(text, field: "bundle ID", allowed: { HeaderValueText.isAlphanumeric($0) || "-.".utf8.contains($0) },
                                  expected: "the app's bundle ID, e.g. com.example.app (letters, digits, '-' and '.')")
        self.text = text
    }

    public var description: String { text }
}
