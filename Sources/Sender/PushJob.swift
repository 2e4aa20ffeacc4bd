import APNs
import FCM
import HTTP2
import Vocabulary
/// One push waiting or in flight: a token and a reference to its group. A value type kept in
/// preallocated rings and tables, so moving it around allocates nothing.
public struct PushJob: Sendable {
    public var token: DeviceToken
    public var group: PushGroup
    /// Caller's identifier, returned with the outcome (e.g. a row in the store).
    public var id: UInt64
    /// HTTP attempts that got a transient error so far (back-off retries).
    var attempts: UInt16 = 0
    /// Immediate resends so far (refused, unknown-and-resent, new connection).
    var resends: UInt16 = 0
    /// Whether it was resent after an unknown outcome (a delivery may then be a duplicate).
    var resentAfterUnknown = false
    /// FCM: whether it got a 401 and was resent with a new access token (a second 401 halts).
    var accessTokenRefreshed = false
    /// Whether it waits for a resend after an answer that says it was not processed (429/5xx,
    /// REFUSED_STREAM, a connection to retire): not on any wire, so a crash now cannot have
    /// delivered it. Its sink is told when it goes off and back on a wire.
    var offWire = false
    /// Monotonic ns (`MonotonicInstant.nanoseconds`) before which it must not be sent (back-off);
    /// kept as the raw word because the delay heap compares it on every turn.
    var notBefore: UInt64 = 0
    /// Monotonic ns of the first submission (latency is measured from here; 0: not yet sent).
    var firstSubmitted: UInt64 = 0

    public init(token: DeviceToken, group: PushGroup, id: UInt64) {
        self.token = token
        self.group = group
        self.id = id
    }
}

/// A push's end, as an outcome sink sees it.
public struct CompletedPush: Sendable {
    public let token: DeviceToken
    public let id: UInt64
    public let group: PushGroup
    public let outcome: PushOutcome
    /// The HTTP status of the last response (0 when none came).
    public let status: Int
    /// APNs' reason for the last refusal, if any.
    public let reason: Reason?
    /// FCM's refusal, if the last answer was one (nil for APNs and for deliveries).
    public let fcm: FCMRefusalDetail?
    /// 410 timestamp in milliseconds, for pruning.
    public let timestamp: Int64?
    /// Whether the push was sent again after an unknown outcome (so it may have arrived twice).
    public let resentAfterUnknown: Bool
    /// APNs' `apns-id` and `apns-unique-id` of the last response, when the pool was asked to keep
    /// them (`PoolConfiguration.keepsResponseIDs`, for a delivery audit log): two strings per push.
    public let apnsID: String?
    public let uniqueID: String?
    /// The last response's headers and body, or why no response came: only for groups that keep
    /// answers (`PushGroup.keepsAnswer`), nil for every device push.
    public let kept: KeptAnswer?
    /// From the first submission to the end (nil: never sent).
    public let latency: Duration?
    /// Back-off retries it took (after 429/5xx).
    public let retries: Int

    /// Whether its refusal prunes the token only behind the circuit breaker: many at once mean the
    /// sender is wrong (environment, topic, project, mangled tokens), not the phones. APNs'
    /// `BadDeviceToken` and `DeviceTokenNotForTopic`; FCM's `SENDER_ID_MISMATCH` and a refused
    /// `message.token`.
    public var prunesBehindBreaker: Bool {
        reason == .badDeviceToken || reason == .deviceTokenNotForTopic || fcm?.action == .removeTokenBehindBreaker
    }

    /// The name a report files the refusal under: APNs' reason or FCM's code.
    public var refusalName: String? { reason?.name ?? fcm?.errorCode }
}

/// What a caller that reads the answer itself needs beyond status and reason (a channel's ID in
/// `apns-channel-id`, a channel list in the body, `apns-request-id` of a broadcast).
public struct KeptAnswer: Sendable {
    /// The response headers a sender keeps (`apns-*`, `retry-after`); empty when none came.
    public var headers: [HeaderField]
    public var body: [UInt8]
    /// Why the last attempt got no response, when it got none.
    public var failure: StreamFailure?

    init(_ response: ResponseView) {
        headers = response.headers.map { HeaderField($0.name, $0.value) }
        body = response.bodyBytes
    }

    init(_ failure: StreamFailure) {
        headers = []
        body = []
        self.failure = failure
    }
}

/// Receives every push's final outcome on the loop thread that finished it. Keep it cheap.
public protocol PushOutcomeSink: AnyObject, Sendable {
    func pushCompleted(_ push: CompletedPush)
    /// Push `id` was answered "not processed, send again" (429/5xx in back-off, a refused stream,
    /// a connection to retire) and waits off every wire: whoever resumes after a crash may send it
    /// again without risking a second delivery. Only for retried pushes, never per push.
    func pushWentOffWire(id: UInt64)
    /// Push `id`, after `pushWentOffWire`, is written to a connection again.
    func pushWentBackOnWire(id: UInt64)
}

extension PushOutcomeSink {
    public func pushWentOffWire(id: UInt64) {}
    public func pushWentBackOnWire(id: UInt64) {}
}
