extension StartProgress {
    /// The record as the store keeps it (without its key), for copying it elsewhere: a cluster keeps
    /// each shard's checkpoints in Redis, so the node that takes a shard over resumes from them.
    public var recordBytes: [UInt8] { encoded }

    /// A record copied with `recordBytes`, for `eventKey` and `topic`.
    public init(eventKey: String, topic: String, recordBytes bytes: [UInt8]) throws(StoreError) {
        let decoded = bytes.withUnsafeBytes { raw in
            Result { () throws(StoreError) in try StartProgress(eventKey: eventKey, topic: topic, decoding: raw) }
        }
        self = try decoded.get()
    }
}
