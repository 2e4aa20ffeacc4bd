/// A stream entry id, "<milliseconds>-<sequence>"; ordered as Redis orders them.
public struct StreamID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let milliseconds: UInt64
    public let sequence: UInt64

    public init(milliseconds: UInt64, sequence: UInt64) {
        self.milliseconds = milliseconds
        self.sequence = sequence
    }

    /// Parses "1700000000000-3" (or "5", sequence 0).
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count <= 2, let ms = UInt64(parts[0]) else { return nil }
        let seq = parts.count == 2 ? UInt64(parts[1]) : 0
        guard let seq else { return nil }
        milliseconds = ms
        sequence = seq
    }

    /// "0-0": before every entry.
    public static let zero = StreamID(milliseconds: 0, sequence: 0)

    public var description: String { "\(milliseconds)-\(sequence)" }

    public static func < (a: StreamID, b: StreamID) -> Bool { (a.milliseconds, a.sequence) < (b.milliseconds, b.sequence) }
}
