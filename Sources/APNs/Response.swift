/// An APNs answer to a device push, broadcast or channel-management request, reduced to what a
/// sender needs: the IDs to record, the reason, the 410 timestamp and the one action to take.
public struct Response: Sendable, Equatable {
    public let status: Int
    /// `apns-id`: ours echoed back, or the one APNs generated.
    public let apnsID: String?
    /// `apns-unique-id`: the ID to look the push up in the Push Notifications Console (development,
    /// and broadcast).
    public let uniqueID: String?
    /// `apns-request-id`: echoed on broadcast and channel-management responses.
    public let requestID: String?
    public let reason: Reason?
    /// Milliseconds since the epoch (410 only): when the token stopped being valid for the topic.
    public let timestamp: Int64?
    public let action: ResponseAction

    /// Builds a response from the `:status`, the response headers and the body bytes.
    public init(status: Int, headers: [HeaderField], body: [UInt8]) {
        self.init(status: status, apnsID: headers.value(named: HeaderName.apnsID), uniqueID: headers.value(named: HeaderName.uniqueID),
                  requestID: headers.value(named: HeaderName.requestID), body: body)
    }

    /// Builds a response from header values a connection has already picked out, and the body in
    /// whatever buffer it has (read only on errors, so a 200 costs no parsing).
    public init<Body: Collection>(status: Int, apnsID: String?, uniqueID: String? = nil, requestID: String? = nil, body: Body)
    where Body.Element == UInt8 {
        let error = (200..<300).contains(status) ? ErrorBody(reason: nil, timestamp: nil) : ErrorBody(json: body)
        self.status = status
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.requestID = requestID
        reason = error.reason
        timestamp = error.timestamp
        action = ResponseAction(status: status, reason: error.reason)
    }

    /// Whether to prune a token registered at `registeredAt` (milliseconds since the epoch) because of
    /// this response. A 410 with a timestamp prunes only tokens registered before it: a device that
    /// registered again later is alive. Other token-removing responses always prune.
    public func shouldRemoveToken(registeredAt: Int64) -> Bool {
        guard action == .removeToken else { return false }
        guard let timestamp else { return true }
        return registeredAt < timestamp
    }
}
