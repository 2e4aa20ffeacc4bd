/// What a token is for: a push-to-start token starts a Live Activity (`liveactivity` push type),
/// a device token receives ordinary alerts, and an FCM registration token reaches an Android
/// phone through Firebase Cloud Messaging. An iOS installation holds at most one push-to-start
/// and one device token; an Android installation holds one FCM token and nothing else.
///
/// The raw value is what the store writes (token keys, topic index entries, replicated writes):
/// it never changes for a kind, and a new kind takes the next number. 3 (`fcm`) came with schema
/// 6; a Sokuho older than that refuses the store, and its cluster nodes the replicated records.
public enum TokenKind: UInt8, Sendable, CaseIterable, Comparable {
    case pushToStart = 1
    case device = 2
    case fcm = 3

    /// The name used in files and on the command line.
    public var name: String {
        switch self {
        case .pushToStart: "pushToStart"
        case .device: "device"
        case .fcm: "fcm"
        }
    }

    public init?(name: String) {
        switch name {
        case "pushToStart": self = .pushToStart
        case "device": self = .device
        case "fcm": self = .fcm
        default: return nil
        }
    }

    /// Whether APNs delivers to the token (push-to-start, device); false for an FCM token.
    public var isAPNs: Bool { self != .fcm }

    /// The kinds APNs delivers to, in store order.
    public static let apnsKinds: [TokenKind] = [.pushToStart, .device]

    public static func < (lhs: TokenKind, rhs: TokenKind) -> Bool { lhs.rawValue < rhs.rawValue }
}
