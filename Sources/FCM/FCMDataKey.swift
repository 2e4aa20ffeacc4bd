/// Keys of a message's `data` map that FCM reserves (FCM.md, "Sending"): `from`,
/// `notification`, `message_type`, and any starting `google.` or `gcm.`. FCM refuses a message
/// carrying one; the template refuses it before sending and the simulator answers it as FCM does.
public enum FCMDataKey {
    public static let reservedWords: Set<String> = ["from", "notification", "message_type"]
    public static let reservedPrefixes = ["google.", "gcm."]

    /// Whether `key` is reserved. Compared without case (`Google.x` too): Google does not say
    /// whether its check is case-sensitive, and the stricter reading costs a sender nothing.
    public static func isReserved(_ key: String) -> Bool {
        let lower = key.lowercased()
        return reservedWords.contains(lower) || reservedPrefixes.contains { lower.hasPrefix($0) }
    }
}
