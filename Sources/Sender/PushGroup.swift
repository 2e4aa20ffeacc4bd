import APNs
import FCM
import HTTP2
import IO

/// What every push of one fan-out group shares: the rendered body, the header set and the policy.
/// Rendered once per group (a region, a train, an election); a push job is then a token plus a
/// reference to its group, so nothing per push is copied or allocated.
///
/// A group can also carry one request that is not a device push (a broadcast, a channel-management
/// call): its job has an empty token, so `:path` is the prefix alone, and the group may use GET or
/// DELETE and keep the whole answer. The pool then judges it with the same rules as every push.
public final class PushGroup: @unchecked Sendable {
    // @unchecked: immutable after init.
    public let label: String
    let headers: HeaderList
    /// nil: a request without a body (GET, DELETE).
    let body: SharedBytes?
    /// Everything of `:path` before the hex token, e.g. "/3/device/"; the whole path for a job
    /// whose token is empty, and for an FCM group, whose token goes in the body.
    let pathPrefix: [UInt8]
    /// An FCM group's body around the token: each push's body is spliced from it into the loop's
    /// buffer when it is sent (`body` is nil then). nil: `body` is every push's.
    let bodyTemplate: FCMMessageTemplate?
    let method: StaticString
    /// Whether a push's outcome carries the response's headers and body (or why none came):
    /// for the few requests whose caller reads the answer itself; device pushes leave it off, so
    /// an answer costs them nothing.
    let keepsAnswer: Bool
    /// After this a push of this group is not sent any more (nil: no deadline).
    public let deadline: MonotonicInstant?
    /// Whether a push whose outcome is unknown (in flight on a connection that died without a
    /// GOAWAY covering it) is sent again. A duplicate start puts a second Live Activity on the phone,
    /// so starts default to false; updates and ends carry a timestamp and are safe to repeat.
    public let resendUnknown: Bool
    /// Where this group's outcomes go instead of the pool's sink: one long-lived pool (the
    /// daemon's warm connections) carries several events at once, each with its own books.
    public let sink: PushOutcomeSink?

    init(label: String, headers: HeaderList, template: FCMMessageTemplate, path: String, deadline: MonotonicInstant?,
         resendUnknown: Bool, sink: PushOutcomeSink?) {
        self.label = label
        self.headers = headers
        body = nil
        pathPrefix = Array(path.utf8)
        bodyTemplate = template
        method = "POST"
        self.deadline = deadline
        self.resendUnknown = resendUnknown
        keepsAnswer = false
        self.sink = sink
    }

    /// An empty `body` is sent as none (GET and DELETE have none).
    public init(label: String, headers: [(name: String, value: String)], body: [UInt8], pathPrefix: String = "/3/device/",
                method: HTTPMethod = .post, deadline: MonotonicInstant? = nil, resendUnknown: Bool, keepsAnswer: Bool = false,
                sink: PushOutcomeSink? = nil) {
        self.label = label
        self.headers = HeaderList(headers)
        self.body = body.isEmpty ? nil : SharedBytes(body)
        self.pathPrefix = Array(pathPrefix.utf8)
        bodyTemplate = nil
        switch method {
        case .post: self.method = "POST"
        case .get: self.method = "GET"
        case .delete: self.method = "DELETE"
        }
        self.deadline = deadline
        self.resendUnknown = resendUnknown
        self.keepsAnswer = keepsAnswer
        self.sink = sink
    }
}

extension PushGroup {
    /// The group of `notification` (its headers and body, checked by the protocol module) for
    /// device tokens: one value describes a push, whoever sends it.
    public convenience init(label: String, notification: Notification, deadline: MonotonicInstant?, resendUnknown: Bool,
                            sink: PushOutcomeSink? = nil) {
        self.init(label: label, headers: notification.headers.map { ($0.name, $0.value) }, body: notification.payload,
                  deadline: deadline, resendUnknown: resendUnknown, sink: sink)
    }
}

extension PushGroup {
    /// An FCM group: every push is `POST /v1/projects/{projectID}/messages:send` with
    /// `content-type: application/json` and the body `template` gives the push's token
    /// (`authorization` is the pool's access token, set per connection). Send it on a pool whose
    /// provider is `.fcm`, which judges the answers by FCM's rules.
    public convenience init(label: String, template: FCMMessageTemplate, projectID: String, deadline: MonotonicInstant?,
                            resendUnknown: Bool, sink: PushOutcomeSink? = nil) {
        self.init(label: label, headers: HeaderList([("content-type", "application/json")]), template: template,
                  path: FCMEndpoint.sendPath(projectID: projectID), deadline: deadline, resendUnknown: resendUnknown, sink: sink)
    }
}
