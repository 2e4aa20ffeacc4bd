import APNs

/// The one-line explanation of an APNs refusal for a person at a terminal: status, reason, and
/// what to do about it. The hint follows the reason's `ResponseAction`, so the CLI and the sender
/// never disagree about what a refusal means.
enum RefusalMessage {
    static func text(_ response: Response) -> String {
        let action = ResponseAction(status: response.status, reason: response.reason)
        return "\(response.status) \(response.reason?.name ?? "(no reason given)"): \(hint(for: action))"
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
        case .newConnection: return "the provider token was refused on this connection; run the command again"
        }
    }
}
