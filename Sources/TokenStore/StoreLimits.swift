import APNs
import Vocabulary

/// Bounds on stored names and tokens, checked before anything is written. They keep every key
/// under LMDB's 511-byte key limit and catch garbage early with a message naming the field.
public enum StoreLimits {
    /// App bundle ids, topic names, installation ids, channel names, event keys: 1...200 bytes.
    public static let maximumNameBytes = 200
    /// An installation follows at most this many topics.
    public static let maximumTopics = 1000
    /// A Live Activity runs at most 8 hours (then iOS ends it), so its record lives no longer.
    public static let maximumActivityLifetimeMilliseconds: UInt64 = 8 * 3600 * 1000

    /// Checks a name: non-empty, at most `maximumNameBytes` UTF-8 bytes, no control characters
    /// (NUL separates key parts).
    public static func checkName(_ value: String, field: String) throws(StoreError) {
        let count = value.utf8.count
        guard count > 0 else { throw StoreError.invalid("\(field) is empty") }
        guard count <= maximumNameBytes else {
            throw StoreError.invalid("\(field) is \(count) bytes long; at most \(maximumNameBytes) are allowed")
        }
        let hasControl = value.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.contains { $0 < 0x20 || $0 == 0x7f }
        } ?? value.utf8.contains { $0 < 0x20 || $0 == 0x7f }
        guard !hasControl else {
            throw StoreError.invalid("\(field) contains a control character")
        }
    }

    /// Whether the HTTP API can address an installation with this id: the id is one path segment
    /// of `/v1/installations/{id}`, and the path is percent-decoded before routing, so an id with
    /// "/" (even sent as "%2F") is never found again; "." and ".." are normalised away by clients.
    /// Such an id could register once (before the API refused it) but the phone can never PUT or
    /// DELETE it. One rule for the daemon (which refuses such ids) and `check()` (which lists the
    /// ones stored before), so the two cannot disagree.
    public static func isAddressableInstallationID(_ id: String) -> Bool {
        !id.utf8.contains(UInt8(ascii: "/")) && id != "." && id != ".."
    }

    /// What `isAddressableInstallationID` refuses, for messages.
    public static let addressableInstallationIDRule = "must not contain '/' or be '.' or '..'"

    /// A stored token of `kind`: an APNs token `DeviceToken.storedAPNsByteCount` bytes, an FCM
    /// token's text `DeviceToken.isFCMRegistrationToken` (bounds written there with every other).
    public static func checkToken(_ token: [UInt8], kind: TokenKind, field: String = "token") throws(StoreError) {
        guard kind == .fcm else { return try checkToken(token, field: field) }
        guard !DeviceToken.isFCMRegistrationToken(String(decoding: token, as: UTF8.self)) else { return }
        throw StoreError.invalid("\(field) is not an FCM registration token (\(token.count) bytes); one is \(fcmTokenRule)")
    }

    /// What an FCM registration token is, for messages that refuse one.
    public static let fcmTokenRule = "\(DeviceToken.fcmByteCount.lowerBound) to \(DeviceToken.fcmByteCount.upperBound) characters of A-Z, a-z, 0-9, '_', ':' and '-'"

    /// A stored APNs token: `DeviceToken.storedAPNsByteCount`, written there with every other token bound.
    public static func checkToken(_ token: [UInt8], field: String = "token") throws(StoreError) {
        let tokenBytes = DeviceToken.storedAPNsByteCount
        guard tokenBytes.contains(token.count) else {
            throw StoreError.invalid("\(field) is \(token.count) bytes; a token has \(tokenBytes.lowerBound)...\(tokenBytes.upperBound) bytes (\(tokenBytes.lowerBound * 2)...\(tokenBytes.upperBound * 2) hex digits)")
        }
    }
}
