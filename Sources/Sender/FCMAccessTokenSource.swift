import Crypto
import FCM
import IO
import Vocabulary

/// The access token a connection presents, numbered: a connection sets its `authorization` header
/// only when the number changes, not per request.
struct PresentedAccessToken: Sendable, CustomStringConvertible {
    let generation: Int
    /// `Bearer <token>`.
    let authorization: String

    /// Never the token: its generation and last 6 characters, for logs.
    var description: String { "access token \(generation) (…\(authorization.suffix(6)))" }
}

/// What a pool hears from its access-token source, on the thread that fetched.
enum AccessTokenEvent: Sendable {
    /// A new token: pushes waiting for one may go.
    case granted
    /// The token endpoint refused the service account for good: the pool halts with this.
    case refused(String)
}

/// An FCM project's access tokens for every pool that sends with its service account (FCM.md,
/// "Authentication"): exchanged at `token_uri`, cached, and exchanged again before they run out —
/// at `refreshDelay(lifetime:)` — on a thread of its own, never a loop's. Sends keep presenting
/// the old token until the new one is in, so a refresh never stalls them.
///
/// A token FCM answers 401 `UNAUTHENTICATED` to (expired early, revoked) is `rejected`: no
/// connection presents it any more, and pushes wait (off every wire) for the next one. A refusal
/// from the token endpoint (`invalid_grant`: a revoked key, a deleted account) halts every pool
/// listening, with Google's description; an endpoint that does not answer is asked again with
/// back-off (1 s doubling to 60 s) for as long as a pool listens.
///
/// Thread-safe: the state sits behind one `Lock`; the per-turn path (`usable`) is a lock, a clock
/// compare and the cached value.
public final class FCMAccessTokenSource: Sendable {
    public let account: ServiceAccount
    private let exchange: FCMTokenExchange

    private struct State {
        var current: PresentedAccessToken?
        /// When the background refresh starts (the token stays in use until the new one is in).
        var refreshAt = MonotonicInstant.distantFuture
        /// After this the token is not presented (a warm pool idle past it would only get 401s).
        var expiresAt = MonotonicInstant.distantFuture
        /// A generation FCM refused (401): never presented again.
        var rejected = 0
        var fetching = false
        var generations = 0
        var refusal: String?
        var listeners: [(id: ObjectIdentifier, notify: @Sendable (AccessTokenEvent) -> Void)] = []
    }

    private let state = Lock(State())
    /// Where the refresh thread waits out its back-off (a shutdown of the last pool ends the wait).
    private let pause = ConditionLock()

    /// `tls` verifies the token host (`account.tokenEndpoint`); `timeout` bounds one exchange.
    public init(account: ServiceAccount, tls: TLSConfiguration, serverName: String? = nil,
                timeout: Duration = .seconds(30)) throws(FCMAuthError) {
        let key: RSASigningKey
        do { key = try RSASigningKey(pem: Array(account.privateKeyPEM.utf8), source: "the service account's private_key") } catch {
            throw .refused("\(error)")
        }
        var endpoint = ProviderEndpoint(host: account.tokenEndpoint.host, port: account.tokenEndpoint.port, tls: tls)
        endpoint.serverName = serverName
        endpoint.connectTimeout = min(endpoint.connectTimeout, timeout)
        self.account = account
        exchange = FCMTokenExchange(account: account, key: key, endpoint: endpoint, timeout: timeout)
    }

    /// When to refresh a token that lives `lifetime`: at 80% of it, but at least 5 minutes before
    /// it runs out when it lives long enough, and never later than halfway (a short-lived token).
    /// Google's 3,599 s token is refreshed after 2,879 s.
    public static func refreshDelay(lifetime: Duration) -> Duration {
        let lead = min(max(lifetime / 5, .seconds(300)), lifetime / 2)
        return lifetime - lead
    }

    /// Tokens granted so far (each exchange that succeeded).
    public var generations: Int { state.withLock { $0.generations } }

    /// Exchanges for a token now, on the calling thread (never a loop's), and keeps it: what a
    /// command does before it sends, so a refused account fails before any connection to FCM.
    public func fetchNow() throws(FCMAuthError) {
        try install(exchange.run()).get()
    }

    /// The token a connection presents now; nil while there is none to present (the first is
    /// being fetched, or FCM refused the last), and the loops are woken when one comes. Starts
    /// the refresh when it is due. Called per loop turn and connection, not per push.
    func usable(now: MonotonicInstant) -> PresentedAccessToken? {
        let (token, start) = state.withLock { state -> (PresentedAccessToken?, Bool) in
            guard state.refusal == nil else { return (nil, false) }
            let usable = state.current.flatMap { $0.generation == state.rejected || now >= state.expiresAt ? nil : $0 }
            let due = usable == nil || now >= state.refreshAt
            guard due, !state.fetching else { return (usable, false) }
            state.fetching = true
            return (usable, true)
        }
        if start { startRefresh() }
        return token
    }

    /// FCM answered 401 to a request that carried `generation`: stop presenting it and get another.
    func rejected(generation: Int) {
        let start = state.withLock { state -> Bool in
            guard state.current?.generation == generation, state.rejected != generation else { return false }
            state.rejected = generation
            guard !state.fetching, state.refusal == nil else { return false }
            state.fetching = true
            return true
        }
        if start { startRefresh() }
    }

    /// Why the endpoint refused the account, once it has (pools halt with it).
    var refusal: String? { state.withLock { $0.refusal } }

    func addListener(_ id: ObjectIdentifier, _ notify: @escaping @Sendable (AccessTokenEvent) -> Void) {
        state.withLock { $0.listeners.append((id, notify)) }
    }

    func removeListener(_ id: ObjectIdentifier) {
        state.withLock { $0.listeners.removeAll { $0.id == id } }
        pause.withLock { pause.broadcast() }
    }

    private func startRefresh() {
        OSThread.startDetached(name: "sokuho-fcm-auth") { [self] in
            var backoff: Duration = .seconds(1)
            while true {
                let result = install(exchange.run())
                guard case let .failure(error) = result, error.isTransient else { return }
                // Asked again while a pool still needs tokens; a shutdown of the last one ends it.
                let listening = state.withLock { state -> Bool in
                    if state.listeners.isEmpty { state.fetching = false }
                    return !state.listeners.isEmpty
                }
                guard listening else { return }
                let end = MonotonicInstant.now() + backoff
                pause.withLock {
                    while MonotonicInstant.now() < end, state.withLock({ !$0.listeners.isEmpty }) { pause.wait(until: end) }
                }
                backoff = min(backoff * 2, .seconds(60))
            }
        }
    }

    /// Keeps a granted token (and tells the listeners), or records a final refusal (and tells
    /// them); a transient failure changes nothing, and the caller asks again.
    private func install(_ result: Result<AccessToken, FCMAuthError>) -> Result<Void, FCMAuthError> {
        let now = MonotonicInstant.now()
        let (event, listeners) = state.withLock { state -> (AccessTokenEvent?, [@Sendable (AccessTokenEvent) -> Void]) in
            switch result {
            case let .success(token):
                state.generations += 1
                state.current = PresentedAccessToken(generation: state.generations, authorization: token.authorization)
                state.refreshAt = now + Self.refreshDelay(lifetime: token.lifetime)
                state.expiresAt = now + token.lifetime
                state.fetching = false
                return (.granted, state.listeners.map(\.notify))
            case let .failure(error) where !error.isTransient:
                state.refusal = state.refusal ?? error.description
                state.fetching = false
                return (.refused(error.description), state.listeners.map(\.notify))
            case .failure:
                return (nil, [])
            }
        }
        if let event { for notify in listeners { notify(event) } }
        return result.map { _ in () }
    }
}
