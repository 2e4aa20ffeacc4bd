import APNs
import HTTP2
import IO

/// What every push of one fan-out group shares: the rendered body, the header set and the policy.
/// Rendered once per group (a region, a train, an election); a push job is then a token plus a
/// reference to its group, so nothing per push is copied or allocated.
public final class PushGroup: @unchecked Sendable {
    // @unchecked: immutable after init.
    public let label: String
    let headers: HeaderList
    let body: SharedBytes
    /// Everything of `:path` before the hex token, e.g. "/3/device/".
    let pathPrefix: [UInt8]
    /// After this a push of this group is not sent any more (nil: no deadline).
    public let deadline: MonotonicInstant?
    /// Whether a push whose outcome is unknown (in flight on a connection that died without a
    /// GOAWAY covering it) is sent again. A duplicate start puts a second Live Activity on the phone,
    /// so starts default to false; updates and ends carry a timestamp and are safe to repeat.
    public let resendUnknown: Bool

    public init(label: String, headers: [(name: String, value: String)], body: [UInt8], pathPrefix: String = "/3/device/",
                deadline: MonotonicInstant? = nil, resendUnknown: Bool) {
        self.label = label
        self.headers = HeaderList(headers)
        self.body = SharedBytes(body)
        self.pathPrefix = Array(pathPrefix.utf8)
        self.deadline = deadline
        self.resendUnknown = resendUnknown
    }
}

extension PushGroup {
    /// The group of `notification` (its headers and body, checked by the protocol module) for
    /// device tokens: one value describes a push, whoever sends it.
    public convenience init(label: String, notification: Notification, deadline: MonotonicInstant?, resendUnknown: Bool) {
        self.init(label: label, headers: notification.headers.map { ($0.name, $0.value) }, body: notification.payload,
                  deadline: deadline, resendUnknown: resendUnknown)
    }
}
