/// The `apns-priority` header. Omitting it means 10 to APNs, which is why the rules below treat a
/// missing priority as 10.
public enum Priority: Int, Sendable, CaseIterable, Comparable {
    /// 1: put the device's power first and never wake it; may be delivered in bursts.
    case low = 1
    /// 5: delivered with the device's power in mind; does not count against the Live Activity budget.
    case normal = 5
    /// 10: deliver now (APNs' default); counts against the Live Activity budget.
    case immediate = 10

    /// Parses a received `apns-priority` value.
    public init(headerValue: String) throws(ValidationError) {
        guard let number = Int(headerValue), let priority = Priority(rawValue: number), priority.headerValue == headerValue else {
            throw ValidationError(field: HeaderName.priority, "'\(HeaderValueText.printable(headerValue))' is not a priority; use 1, 5 or 10",
                                  reason: .badPriority)
        }
        self = priority
    }

    public var headerValue: String {
        switch self {
        case .low: "1"
        case .normal: "5"
        case .immediate: "10"
        }
    }

    public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Throws if `priority` (nil: the header is left out, which APNs reads as 10) breaks a rule of
    /// `pushType`: background pushes must be 5 (10 is an error to APNs), Live Activity pushes 5 or 10.
    public static func check(_ priority: Priority?, for pushType: PushType) throws(ValidationError) {
        switch pushType {
        case .background where priority != .normal:
            let given = priority.map { "is \($0.rawValue)" } ?? "is missing, which APNs reads as 10"
            throw ValidationError(field: HeaderName.priority, "\(given), but a background push must have priority 5; set apns-priority to 5",
                                  reason: .badPriority)
        case .liveactivity where priority == .low:
            throw ValidationError(field: HeaderName.priority,
                                  "is 1, but a Live Activity push takes 5 (outside the update budget) or 10 (immediate); use 5 or 10",
                                  reason: .badPriority)
        default:
            return
        }
    }
}
