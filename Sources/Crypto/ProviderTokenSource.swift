import Vocabulary

/// Which token generation a connection presents, and since when (Unix seconds). A connection owns
/// one, starting from nil (a new connection), and hands it to `ProviderTokenSource.token(for:)`
/// each time it is about to send a request, so `startedAt` is the moment the connection first
/// presented that generation's token — not the moment it was assigned.
public struct ProviderTokenLease: Sendable, Equatable {
    /// The grid window of the token: `issuedAt / 1800`.
    public let generation: Int
    /// When the connection first presented the token (local Unix seconds).
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

/// Provider tokens on a fixed wall-clock grid, shared by every process and node that holds the key,
/// with per-connection switching (APNS.md §5).
///
/// - Generation g covers UTC epoch seconds [g × 1800, (g + 1) × 1800) and its token's `iat` is
///   g × 1800. Signing is deterministic (RFC 6979), so any two processes or versions with the same
///   key present byte-identical JWTs within a window: APNs sees one token, however many senders
///   share a key, team or IP. Each window's token is signed once per process and cached.
/// - A connection moves to the current generation only when it next sends, and only after it has
///   presented its current token for `minimumTimeOnToken` (20 min): APNs answers 429
///   `TooManyProviderTokenUpdates` to a connection that changes token sooner.
/// - A connection joins a generation at most 30 min into its window and leaves it once it has
///   used it 20 min, so no presented token is 50 min old (`maximumTokenAge`), well inside APNs'
///   hour. A lease that would break that (one restored or handed over from elsewhere) is moved on.
///
/// Thread-safe: all state sits behind one `Lock`. The per-request path is a lock and two compares
/// returning the cached value (no allocation); signing (≈1 ms) happens under the lock once per window.
public final class ProviderTokenSource: Sendable {
    /// The grid: every generation's `iat` is a multiple of this.
    public static let window: Duration = .seconds(windowSeconds)
    /// How long a connection presents a token before it may move to a newer one.
    public static let minimumTimeOnToken: Duration = .seconds(minimumSeconds)
    /// No token is presented at this age or older (window + minimum time on a token).
    public static let maximumTokenAge: Duration = .seconds(maximumAgeSeconds)

    static let windowSeconds: Int64 = 1800
    static let minimumSeconds: Int64 = 1200
    static let maximumAgeSeconds: Int64 = windowSeconds + minimumSeconds

    /// The two newest tokens signed: the generations connections can legitimately hold (the current
    /// one and the one before it, which a connection keeps up to 20 min into the current window).
    private struct State {
        var newest: ProviderToken?
        var previous: ProviderToken?
        var signatures = 0
    }

    public let signer: ProviderTokenSigner
    private let now: @Sendable () -> Int64
    private let state = Lock(State())

    public init(signer: ProviderTokenSigner, now: @escaping @Sendable () -> Int64 = WallClock.seconds) {
        self.signer = signer
        self.now = now
    }

    /// This source's idea of now (Unix seconds): the clock a refusal's diagnosis must compare with.
    public var currentSeconds: Int64 { now() }

    /// How many tokens have been signed so far: one per window in normal operation.
    public var generationsMinted: Int { state.withLock { $0.signatures } }

    /// The grid window that contains `seconds` (floored, also for times before 1970).
    public static func generation(at seconds: Int64) -> Int {
        Int(seconds >= 0 ? seconds / windowSeconds : (seconds - windowSeconds + 1) / windowSeconds)
    }

    /// The token of the window containing `seconds`, as every process signs it.
    public func token(at seconds: Int64) throws(CryptoError) -> ProviderToken {
        let generation = Self.generation(at: seconds)
        return try state.withLock { (state: inout State) throws(CryptoError) -> ProviderToken in
            try Self.token(generation, in: &state, signer: signer)
        }
    }

    /// The token a connection holding `lease` presents on the request it is about to send. Call it
    /// right before sending (not when the connection is opened or merely idle): the first call for a
    /// generation stamps the lease with the time the token is first presented, and the 20 minutes
    /// count from that stamp. A nil lease (a new connection) starts on the current generation.
    ///
    /// The returned value is the cached one; compare `generation` with the previous call to know
    /// whether the `authorization` header changed.
    public func token(for lease: inout ProviderTokenLease?) throws(CryptoError) -> ProviderToken {
        let now = self.now()
        let current = Self.generation(at: now)
        let held = lease
        let (token, newLease) = try state.withLock { (state: inout State) throws(CryptoError) -> (ProviderToken, ProviderTokenLease) in
            guard let held, held.generation != current else {
                return (try Self.token(current, in: &state, signer: signer), held ?? ProviderTokenLease(generation: current, startedAt: now))
            }
            // The clock stepped back past the stamp: count the 20 minutes afresh on the clock as it is
            // now, so a large step cannot pin the connection to its token for hours.
            let stamp = min(held.startedAt, now)
            let age = now - Int64(held.generation) * Self.windowSeconds
            if now - stamp < Self.minimumSeconds && age < Self.maximumAgeSeconds {
                return (try Self.token(held.generation, in: &state, signer: signer), ProviderTokenLease(generation: held.generation, startedAt: stamp))
            }
            return (try Self.token(current, in: &state, signer: signer), ProviderTokenLease(generation: current, startedAt: now))
        }
        if newLease != held { lease = newLease }
        return token
    }

    /// Generation `generation`'s token from the cache, or signed now and cached. Signing is
    /// deterministic, so a generation that fell out of the cache is re-signed to the same bytes.
    private static func token(_ generation: Int, in state: inout State, signer: ProviderTokenSigner) throws(CryptoError) -> ProviderToken {
        if let newest = state.newest, newest.generation == generation { return newest }
        if let previous = state.previous, previous.generation == generation { return previous }
        let issuedAt = Int64(generation) * windowSeconds
        let jwt = try signer.token(issuedAt: issuedAt)
        state.signatures += 1
        let token = ProviderToken(generation: generation, issuedAt: issuedAt, jwt: jwt, authorization: "bearer " + jwt)
        if let newest = state.newest, newest.generation > generation {
            state.previous = token
        } else {
            state.previous = state.newest
            state.newest = token
        }
        return token
    }
}
