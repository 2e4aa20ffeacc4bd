import APNs

/// The one-line explanation of an APNs refusal for a person at a terminal: status, reason, and
/// what to do about it. The hint follows the reason's `ResponseAction`, so the CLI and the sender
/// never disagree about what a refusal means.
enum RefusalMessage {
    static func text(_ response: Response) -> String {
        let action = ResponseAction(status: response.status, reason: response.reason)
        // A command signs its provider token just before sending, so "expired" means the clocks disagree,
        // and running it again (the .newConnection hint) would fail the same way.
        let hint = response.reason == .expiredProviderToken
            ? "the provider token was signed just now with this machine's clock, yet APNs finds it over an hour old; set the clock right (date -u)"
            : hint(for: action)
        return "\(response.status) \(response.reason?.name ?? "(no reason given)"): \(hint)"
    }

    static func hint(for action: ResponseAction) -> String {
        switch action {
        case .delivered: return "accepted"
        case .removeToken: return "the device token is not valid for this app and environment; check --token, --topic and --environment"
        case .removeChannel: return "the channel does not exist; see 'sokuho channels list'"
        case .retry: return "a temporary refusal; try again later"
        case .retryOnNewConnection: return "the server is shutting down; try again"
        case .fixRequest: return "the request itself is wrong; sending it again unchanged will fail again"
        case .fixCredentials: return "check --team-id, --key-id, --key, --topic and --environment"
        case .newConnection: return "APNs will not take more on this connection; run the command again (it opens a new one)"
        }
    }
}
