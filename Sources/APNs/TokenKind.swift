/// What a token is for: a push-to-start token starts a Live Activity (`liveactivity` push type),
/// a device token receives ordinary alerts. An installation holds at most one of each.
public enum TokenKind: UInt8, Sendable, CaseIterable, Comparable {
    case pushToStart = 1
    case device = 2
    case fcm = 3

    /// The name used in files and on the command line.
    public var name: String { self == .pushToStart ? "pushToStart" : "device" }

    public init?(name: String) {
        switch name {
        case "pushToStart": self = .pushToStart
        case "device": self = .device
        default: return nil
        }
    }

    public static func < (lhs: TokenKind, rhs: TokenKind) -> Bool { lhs.rawValue < rhs.rawValue }
}
