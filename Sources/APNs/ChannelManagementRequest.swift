import JSONCore

/// A request to the channel-management service (`Environment.channelManagement`): create, read,
/// delete or list broadcast channels of one app. The channel ID travels in `apns-channel-id`, never
/// in the path.
public struct ChannelManagementRequest: Sendable {
    public enum Operation: Sendable, Hashable {
        /// `POST /1/apps/<bundle>/channels`; answers 201 with the new ID in `apns-channel-id`.
        case create(MessageStoragePolicy)
        /// `GET /1/apps/<bundle>/channels`; answers the channel's policy and push type as JSON.
        case read(ChannelID)
        /// `DELETE /1/apps/<bundle>/channels`; answers 204.
        case delete(ChannelID)
        /// `GET /1/apps/<bundle>/all-channels`; answers `{"channels":[…]}`.
        case listAll
    }

    public let operation: Operation
    public let bundle: BundleID
    public let method: HTTPMethod
    public let path: String
    /// `apns-channel-id` for read and delete, then `apns-request-id` when set.
    public let headers: [HeaderField]
    /// `{"message-storage-policy":0|1,"push-type":"LiveActivity"}` for create; empty otherwise.
    public let body: [UInt8]

    public init(_ operation: Operation, bundle: BundleID, requestID: APNsID? = nil) {
        self.operation = operation
        self.bundle = bundle
        let channels = "/1/apps/" + bundle.text + "/channels"
        var headers: [HeaderField] = []
        var body: [UInt8] = []
        switch operation {
        case .create(let policy):
            method = .post
            path = channels
            var writer = JSONWriter(reservingCapacity: 64)
            writer.beginObject()
            writer.key("message-storage-policy")
            writer.int(policy.rawValue)
            writer.key("push-type")
            writer.string("LiveActivity")
            writer.endObject()
            body = writer.bytes
        case .read(let id):
            method = .get
            path = channels
            headers.append(HeaderField(HeaderName.channelID, id.text))
        case .delete(let id):
            method = .delete
            path = channels
            headers.append(HeaderField(HeaderName.channelID, id.text))
        case .listAll:
            method = .get
            path = "/1/apps/" + bundle.text + "/all-channels"
        }
        if let requestID { headers.append(HeaderField(HeaderName.requestID, requestID.text)) }
        self.headers = headers
        self.body = body
    }
}
