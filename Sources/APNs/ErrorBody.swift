import JSONCore

/// The JSON APNs sends with an error, `{"reason":"…","timestamp":…}`, in a response body or in the
/// debug data of a GOAWAY frame. Anything that is not such JSON yields no reason rather than an
/// error: the status or the GOAWAY still says enough to act on.
public struct ErrorBody: Sendable, Equatable {
    public let reason: Reason?
    /// Milliseconds since the epoch; sent with 410 only: when APNs learned the token was invalid.
    public let timestamp: Int64?

    public init(reason: Reason?, timestamp: Int64?) {
        self.reason = reason
        self.timestamp = timestamp
    }

    /// Parses an error body; empty or unparsable bytes give an empty `ErrorBody`.
    public init<Bytes: Collection>(json bytes: Bytes) where Bytes.Element == UInt8 {
        guard !bytes.isEmpty, let value = try? JSONParser.parse(bytes), value.isObject else {
            self.init(reason: nil, timestamp: nil)
            return
        }
        let reason = value["reason"]?.stringValue.map(Reason.init)
        var timestamp = value["timestamp"]?.int64Value
        if timestamp == nil, let number = value["timestamp"]?.doubleValue, number.isFinite, abs(number) < 9e18 {
            timestamp = Int64(number)  // written as 1.7e12 or with a fraction
        }
        self.init(reason: reason, timestamp: timestamp)
    }

    /// The reason in a GOAWAY frame's debug data, if APNs put its error JSON there.
    public static func goAwayReason<Bytes: Collection>(debugData: Bytes) -> Reason? where Bytes.Element == UInt8 {
        ErrorBody(json: debugData).reason
    }

    /// The same, for debug data a connection already holds as text.
    public static func goAwayReason(debugData: String) -> Reason? {
        goAwayReason(debugData: debugData.utf8)
    }
}
