import Synchronization

/// Which token generation a connection presents, and since when (Unix seconds). A connection owns
/// one, starting from nil, and hands it to `ProviderTokenSource.token(for:)` for every request.
public struct ProviderTokenLease: Sendable, Equatable {
    public let generation: Int
    public let startedAt: Int64

    public init(generation: Int, startedAt: Int64) {
        self.generation = generation
        self.startedAt = startedAt
    }
}

/// One generation's token, with the `authorization` header value built once.
public struct ProviderToken: Sendable, Equatable {
    public let generation: Int
    public let issuedAt: Int64
    public let jwt: String
    /// `bearer <jwt>`, ready for the `authorization` header.
    public let authorization: String
}

/// Shared provider-token generations with per-connection switching (APNS.md §5 and "Shared token
/// generations, per-connection switching").
///
/// - A new generation is minted lazily, when a token is asked for and the newest is
///   `refreshInterval` (30 min) old or older. Its JWT and header are built once (no signing per request).
/// - A connection starts on the newest generation and moves to a newer one only after
///   `minimumTimeOnToken` (20 min) on its current one: APNs answers 429 `TooManyProviderTokenUpdates`
///   to a connection that changes token sooner.
/// - A connection never presents a token older than `maximumTokenAge` (55 min); APNs refuses
///   `iat` older than an hour (403 `ExpiredProviderToken`). A connection joins a generation younger than
///   30 min, so by the time it is 55 min old the connection has used it ≥ 25 min and may switch: the
///   two rules never conflict (`Policy` checks refresh + minimum ≤ maximum).
///
/// Thread-safe: all state sits behind one `Mutex`; minting (≈1 ms) happens under it, once per generation.
public final class ProviderTokenSource: Sendable {
    public struct Policy: Sendable, Equatable {
        public let refreshInterval: Int64
        public let minimumTimeOnToken: Int64
        public let maximumTokenAge: Int64

        /// 30 / 20 / 55 minutes.
        public static let apple = Policy(refreshInterval: 30 * 60, minimumTimeOnToken: 20 * 60, maximumTokenAge: 55 * 60)

        public init(refreshInterval: Int64, minimumTimeOnToken: Int64, maximumTokenAge: Int64) {
            precondition(refreshInterval > 0 && minimumTimeOnToken >= 0, "token policy intervals must be positive")
            precondition(refreshInterval + minimumTimeOnToken <= maximumTokenAge,
                         "a connection could be forced off a token before its minimum time on it")
            self.refreshInterval = refreshInterval
            self.minimumTimeOnToken = minimumTimeOnToken
            self.maximumTokenAge = maximumTokenAge
        }
    }

    private struct State {
        /// Generations young enough to present, oldest first; the last is the newest.
        var live: [ProviderToken] = []
        var minted = 0
    }

    public let signer: ProviderTokenSigner
    public let policy: Policy
    private let now: @Sendable () -> Int64
    private let state = Mutex(State())

    public init(signer: ProviderTokenSigner, policy: Policy = .apple, now: @escaping @Sendable () -> Int64 = SystemClock.seconds) {
        self.signer = signer
        self.policy = policy
        self.now = now
    }

    /// How many generations have been minted so far (each one is one signature).
    public var generationsMinted: Int { state.withLock { $0.minted } }

    /// The token a connection holding `lease` presents now, moving the lease to the newest generation
    /// when the rules allow or require it. A nil lease (a new connection) starts on the newest.
    public func token(for lease: inout ProviderTokenLease?) throws(CryptoError) -> ProviderToken {
        let now = self.now()
        let current = lease
        let (token, newLease) = try state.withLock { (state: inout State) throws(CryptoError) -> (ProviderToken, ProviderTokenLease) in
            let newest = try newestGeneration(in: &state, at: now)
            if let current, current.generation != newest.generation,
               let held = state.live.first(where: { $0.generation == current.generation }),
               !mustLeave(held, heldSince: current.startedAt, at: now) {
                return (held, current)
            }
            if let current, current.generation == newest.generation { return (newest, current) }
            return (newest, ProviderTokenLease(generation: newest.generation, startedAt: now))
        }
        lease = newLease
        return token
    }

    /// Whether a connection that started on `token` at `heldSince` moves to a newer generation now:
    /// it may after the minimum time on it, and must before the token exceeds the maximum age.
    private func mustLeave(_ token: ProviderToken, heldSince: Int64, at now: Int64) -> Bool {
        now - heldSince >= policy.minimumTimeOnToken || now - token.issuedAt > policy.maximumTokenAge
    }

    /// The newest generation, minting one when there is none or it has reached the refresh interval,
    /// and forgetting generations too old to be presented.
    private func newestGeneration(in state: inout State, at now: Int64) throws(CryptoError) -> ProviderToken {
        if let newest = state.live.last, now - newest.issuedAt < policy.refreshInterval { return newest }
        let jwt = try signer.token(issuedAt: now)
        state.minted += 1
        let token = ProviderToken(generation: state.minted, issuedAt: now, jwt: jwt, authorization: "bearer " + jwt)
        state.live.removeAll { now - $0.issuedAt > policy.maximumTokenAge }
        state.live.append(token)
        return token
    }
}
