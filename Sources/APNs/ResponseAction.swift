/// What a sender does with one response: exactly one action per status and reason (APNS.md §4, §9.3
/// and §12), so the sender, the store pruning and the event report agree.
public enum ResponseAction: String, Sendable, CaseIterable {
    /// 2xx: count it as sent.
    case delivered
    /// The device token is dead for this topic: prune it (for 410, only if it was registered before
    /// the response's `timestamp`). Never retry.
    case removeToken
    /// The broadcast channel is gone (deleted or never existed): stop using it, forget it.
    case removeChannel
    /// Transient: resend after a back-off on any healthy connection.
    case retry
    /// The server is shutting the connection down: resend after a back-off on another connection.
    case retryOnNewConnection
    /// A bug in the request: never resend it unchanged; report it once per event.
    case fixRequest
    /// Credentials or configuration are wrong (key, certificate, capability, topic): stop and alert
    /// for the whole pool rather than failing every push one by one.
    case fixCredentials
    /// This connection's state is unusable (idle-timed-out, provider token expired or switched too
    /// often, another key bound to it): retire it and resend on a fresh connection with a current token.
    case newConnection

    /// The action for `status` and `reason`. A 2xx is delivered whatever else it says. A known reason
    /// decides; an unknown or missing one falls back on the status class: 403 fix credentials, 410
    /// remove the token (APNs defines 410 so), 429 and 5xx retry, any other status fix the request.
    public init(status: Int, reason: Reason?) {
        if (200..<300).contains(status) { self = .delivered; return }
        if let action = reason?.action { self = action; return }
        switch status {
        case 403: self = .fixCredentials
        case 410: self = .removeToken
        case 429, 500..<600: self = .retry
        default: self = .fixRequest
        }
    }
}
