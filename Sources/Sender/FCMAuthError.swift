/// Why no FCM access token could be had. Never carries the token, the assertion or the key.
public enum FCMAuthError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The token endpoint refused the service account (Google's `invalid_grant` and the other
    /// OAuth refusals, a key that cannot sign): asking again gets the same answer, so a pool halts.
    case refused(String)
    /// No usable answer (the host unreachable, TLS, a 5xx, a proxy's page): worth asking again later.
    case unavailable(String)

    public var description: String {
        switch self {
        case let .refused(text), let .unavailable(text): return text
        }
    }

    /// Whether asking again may succeed.
    public var isTransient: Bool {
        if case .unavailable = self { return true }
        return false
    }
}
