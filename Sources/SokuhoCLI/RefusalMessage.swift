import APNs
import Crypto
import Vocabulary

/// The one-line explanation of an APNs refusal for a person at a terminal: status, reason, and
/// what to do about it. The hint follows the reason's `ResponseAction`, so the CLI and the sender
/// never disagree about what a refusal means.
enum RefusalMessage {
    /// `tokenIssuedAt` is the `iat` of the provider token sent: a command presents the current
    /// 30-minute window's token, at most 30 minutes old by this machine's clock, so "expired" means
    /// the clocks disagree, and running it again (the .newConnection hint) would fail the same way.
    static func text(_ response: Response, tokenIssuedAt: Int64? = nil, now: Int64 = WallClock.seconds()) -> String {
        let action = ResponseAction(status: response.status, reason: response.reason)
        let clock = tokenIssuedAt.flatMap { issuedAt in
            response.reason.flatMap {
                ProviderTokenClockDiagnosis.diagnose(reason: $0.name, issuedAt: issuedAt, now: now, earlierTokenAccepted: false)
            }
        }
        let hint = clock ?? hint(for: action)
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
