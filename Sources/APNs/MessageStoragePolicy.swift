/// A broadcast channel's `message-storage-policy`, fixed when the channel is created.
public enum MessageStoragePolicy: Int, Sendable, CaseIterable {
    /// 0: nothing stored, one delivery attempt; a higher publishing budget, for frequent updates
    /// (scores, counts). Broadcasts on it must carry `apns-expiration: 0`.
    case noMessageStored = 0
    /// 1: APNs keeps the latest message up to 8 hours, for infrequent updates.
    case mostRecentMessageStored = 1
}
