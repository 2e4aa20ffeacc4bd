import APNs
import TokenStore

/// A provider lane: the way an event reaches the phones of one push provider — APNs for iOS
/// (push-to-start and device tokens, channels), FCM for Android. Reports, metrics and the books
/// of a run keep one value per lane (`PerLane`), so a count means the same in every lane and the
/// totals are their sums.
public enum Lane: Int, CaseIterable, Sendable, Comparable {
    case apns = 0
    case fcm = 1

    /// The lane that carries tokens of `kind`.
    public init(kind: TokenKind) { self = kind == .fcm ? .fcm : .apns }

    /// Its name in reports (`lanes.apns`), metrics (`provider="apns"`) and logs.
    public var name: String {
        switch self {
        case .apns: "apns"
        case .fcm: "fcm"
        }
    }

    /// The phones it reaches, for messages ("2 iOS phones not sent to").
    public var platform: Platform { self == .fcm ? .android : .ios }

    public init?(name: String) {
        guard let lane = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = lane
    }

    public static func < (a: Lane, b: Lane) -> Bool { a.rawValue < b.rawValue }
}
