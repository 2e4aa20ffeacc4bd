import JSONCore

/// Reads the successful answers of channel-management requests. Call these only when the
/// `Response` of the request says `.delivered`; errors are read by `Response` like any other.
public enum ChannelManagementResponse {
    /// A channel as `read` describes it.
    public struct ChannelInfo: Sendable, Equatable {
        public let storagePolicy: MessageStoragePolicy
        /// `LiveActivity`, the only type APNs has today.
        public let pushType: String
    }

    /// The ID of a created channel, from the `apns-channel-id` header of the 201 answer.
    public static func createdChannelID(headers: [HeaderField]) throws(ValidationError) -> ChannelID {
        guard let text = headers.value(named: HeaderName.channelID) else {
            throw ValidationError(field: HeaderName.channelID,
                                  "is missing from the channel-create answer; APNs returns the new channel's ID in this header (check the host is the channel-management one)")
        }
        return try ChannelID(text)
    }

    /// The body of a `read` answer: `{"message-storage-policy":0|1,"push-type":"LiveActivity"}`.
    public static func channelInfo(body: [UInt8]) throws(ValidationError) -> ChannelInfo {
        let value = try object(body, what: "channel-read")
        guard let number = value["message-storage-policy"]?.int64Value, let policy = MessageStoragePolicy(rawValue: Int(number)) else {
            throw ValidationError(field: "message-storage-policy", "is missing or not 0 or 1 in the channel-read answer")
        }
        return ChannelInfo(storagePolicy: policy, pushType: value["push-type"]?.stringValue ?? "")
    }

    /// The body of a `listAll` answer: `{"channels":["<base64>",…]}`.
    public static func channelList(body: [UInt8]) throws(ValidationError) -> [ChannelID] {
        let value = try object(body, what: "all-channels")
        guard let elements = value["channels"]?.arrayValue else {
            throw ValidationError(field: "channels", "is missing or not an array in the all-channels answer")
        }
        var ids: [ChannelID] = []
        ids.reserveCapacity(elements.count)
        for element in elements {
            guard let text = element.stringValue else {
                throw ValidationError(field: "channels", "holds \(element.jsonText), which is not a channel ID string")
            }
            ids.append(try ChannelID(text))
        }
        return ids
    }

    /// Whether a delete left the channel gone: any 2xx, or 404 `BadPath`, which APNs has been seen
    /// to answer for a channel that was already deleted (APNS.md §9.2, observed).
    public static func deleteSucceeded(_ response: Response) -> Bool {
        response.action == .delivered || (response.status == 404 && response.reason == .badPath)
    }

    private static func object(_ body: [UInt8], what: String) throws(ValidationError) -> JSONValue {
        let value: JSONValue
        do {
            value = try JSONParser.parse(body)
        } catch {
            throw ValidationError(field: "body", "of the \(what) answer is not the JSON APNs documents: \(error)")
        }
        guard value.isObject else { throw ValidationError(field: "body", "of the \(what) answer is \(value.jsonText), not a JSON object") }
        return value
    }
}
