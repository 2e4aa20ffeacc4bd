import APNs
import Crypto
import IO
import Sender
import Synchronization
import Vocabulary

/// An app's calls to APNs' channel-management host — creating, reading, listing and deleting
/// broadcast channels — on ONE connection kept for the app: opened on the first call, PINGed
/// every keep-alive once opened, reused by the daemon's channel routes, its credential check and
/// every `"channel":"auto"` event, so none of them pays a handshake or a pool of its own (one per
/// call leaked two descriptors and 0.6 MB each until the daemon died, issue 21). Requests go
/// through the same pool rules and classifier as the event's pushes (a 429 is retried, a refused
/// stream resent). At most `maximumInFlight` requests are on the wire at once; up to
/// `maximumQueued` more wait, each with its deadline; past that a call is refused at once.
///
/// Broadcasts are pushes, not channel management: they go on the pool the event sends on (the
/// app's warm connections in the daemon), see `broadcast(_:on:)`.
public final class ChannelClient: Sendable {
    let bundle: BundleID
    private let manage: ProviderEndpoint
    private let tokens: ProviderTokenSource?
    private let timeout: Duration
    private let keepalive: Duration?
    /// The kept connection's pool: nil until the first call, replaced when it halted (a key APNs
    /// refused, a host that was never reachable) so the next call tries afresh.
    private let pool = Lock<ConnectionPool?>(nil)
    private let outstanding = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)

    /// Streams on the channel host's connection at once.
    public static let maximumInFlight = 4
    /// Calls waiting (queued or on the wire) at most, per app, before more are refused.
    public static let maximumQueued = 64

    /// `keepalive`: keep the connection open between calls, PINGed this often (the daemon);
    /// nil: it opens on the first call and closes with `shutdown` (a command's one run).
    public init(bundle: BundleID, manage: ProviderEndpoint, tokens: ProviderTokenSource?, timeout: Duration,
                keepalive: Duration? = nil) {
        self.bundle = bundle
        self.manage = manage
        self.tokens = tokens
        self.timeout = timeout
        self.keepalive = keepalive
    }

    /// One request's answer: its outcome, status (0: none came), APNs' reason, headers and body.
    typealias Answer = ConnectionPool.Answer

    /// Channel-host connections open or opening right now (0 or 1).
    public var connectionsUp: Int { pool.withLock { $0?.connectionsUp ?? 0 } }

    /// Calls waiting for their answers right now.
    public var callsOutstanding: Int { outstanding.load(ordering: .relaxed) }

    /// Closes the kept connection; calls still waiting end as unavailable. Later calls are refused.
    public func shutdown() {
        closed.store(true, ordering: .releasing)
        pool.withLock { pool -> ConnectionPool? in defer { pool = nil }; return pool }?.shutdown()
    }

    // MARK: Operations, waiting (an event's thread, the credential check)

    /// Creates `count` channels (an event's groups need theirs before the first start goes out,
    /// so they are created together).
    public func create(count: Int, policy: MessageStoragePolicy) throws(FanoutError) -> [ChannelID] {
        guard count > 0 else { return [] }
        return try wait(Self.createRequests(count: count, policy: policy, bundle: bundle), Self.createdIDs)
    }

    /// The storage policy of an existing channel (it decides a broadcast's `apns-expiration`).
    func storagePolicy(of id: ChannelID) throws(FanoutError) -> MessageStoragePolicy {
        try wait([ChannelManagementRequest(.read(id), bundle: bundle, requestID: APNsID.random())]) { (answers) throws(FanoutError) in
            let answer = answers[0]
            guard answer.succeeded else { throw FanoutError(.refused, "channel \(id.text): APNs refused to read it: \(answer.summary)") }
            do { return try ChannelManagementResponse.channelInfo(body: answer.body).storagePolicy } catch {
                throw FanoutError(.unavailable, "channel \(id.text): the channel host's answer could not be read: \(error)")
            }
        }
    }

    /// Every channel of the app (`GET …/all-channels`). Also the daemon's periodic credential
    /// check: it needs a valid provider token and the app's broadcast capability, and sends nothing
    /// to a phone.
    public func list() throws(FanoutError) -> [ChannelID] {
        try wait([ChannelManagementRequest(.listAll, bundle: bundle, requestID: APNsID.random())], Self.listed)
    }

    /// Deletes one channel; true when it was already gone (APNs answers 404 BadPath, APNS.md §9.2),
    /// which counts as deleted, so a repeated delete succeeds.
    public func delete(_ id: ChannelID) throws(FanoutError) -> Bool {
        try wait([ChannelManagementRequest(.delete(id), bundle: bundle, requestID: APNsID.random())]) { (answers) throws(FanoutError) in
            try Self.deleted(id, answers[0])
        }
    }

    /// Deletes channels; a channel already gone counts as deleted (APNS.md §9.2).
    func delete(_ ids: [ChannelID]) throws(FanoutError) -> [Answer] {
        guard !ids.isEmpty else { return [] }
        return try wait(ids.map { ChannelManagementRequest(.delete($0), bundle: bundle, requestID: APNsID.random()) }) { $0 }
    }

    // MARK: Operations, answering later (the API thread, which must never wait)

    /// `list()`, with the result handed to `completion` on a loop thread (it must not block).
    public func list(completion: @escaping @Sendable (Result<[ChannelID], FanoutError>) -> Void) {
        call([ChannelManagementRequest(.listAll, bundle: bundle, requestID: APNsID.random())], Self.listed, completion: completion)
    }

    /// `create(count: 1, policy:)`, answering later.
    public func create(policy: MessageStoragePolicy, completion: @escaping @Sendable (Result<ChannelID, FanoutError>) -> Void) {
        call(Self.createRequests(count: 1, policy: policy, bundle: bundle), { (answers) throws(FanoutError) in try Self.createdIDs(answers)[0] },
             completion: completion)
    }

    /// `delete(_:)`, answering later.
    public func delete(_ id: ChannelID, completion: @escaping @Sendable (Result<Bool, FanoutError>) -> Void) {
        call([ChannelManagementRequest(.delete(id), bundle: bundle, requestID: APNsID.random())],
             { (answers) throws(FanoutError) in try Self.deleted(id, answers[0]) }, completion: completion)
    }

    // MARK: Broadcasts

    /// One broadcast per request on `pool` (the event's: the app's warm connections in the daemon),
    /// waiting for the answers.
    static func broadcast(_ requests: [BroadcastRequest], on pool: ConnectionPool, timeout: Duration) throws(FanoutError) -> [Answer] {
        guard !requests.isEmpty else { return [] }
        let answers = pool.perform(requests.map(ConnectionPool.Request.init), timeout: timeout)
        try checkReached(answers, host: "the push host")
        return answers
    }

    // MARK: Interpreting answers

    private static func createRequests(count: Int, policy: MessageStoragePolicy, bundle: BundleID) -> [ChannelManagementRequest] {
        (0..<count).map { _ in ChannelManagementRequest(.create(policy), bundle: bundle, requestID: APNsID.random()) }
    }

    private static func createdIDs(_ answers: [Answer]) throws(FanoutError) -> [ChannelID] {
        var ids: [ChannelID] = []
        for answer in answers {
            guard answer.succeeded else { throw FanoutError(.refused, "APNs refused to create a broadcast channel: \(answer.summary)") }
            do { ids.append(try ChannelManagementResponse.createdChannelID(headers: answer.headers)) } catch {
                throw FanoutError(.unavailable, "the channel host's answer to a create has no usable apns-channel-id: \(error)")
            }
        }
        return ids
    }

    private static func listed(_ answers: [Answer]) throws(FanoutError) -> [ChannelID] {
        let answer = answers[0]
        guard answer.succeeded else { throw FanoutError(.refused, "APNs refused to list the channels: \(answer.summary)") }
        do { return try ChannelManagementResponse.channelList(body: answer.body) } catch {
            throw FanoutError(.unavailable, "the channel host's list of channels could not be read: \(error)")
        }
    }

    private static func deleted(_ id: ChannelID, _ answer: Answer) throws(FanoutError) -> Bool {
        if answer.succeeded { return false }
        guard ChannelManagementResponse.deleteSucceeded(answer.response) else {
            throw FanoutError(.refused, "channel \(id.text): APNs refused to delete it: \(answer.summary)")
        }
        return true
    }

    /// No answer to any request (unreachable, TLS, the deadline) is the call's failure (exit 69);
    /// a request left without one otherwise is reported by the caller with its summary.
    private static func checkReached(_ answers: [Answer], host: String) throws(FanoutError) {
        if !answers.isEmpty, answers.allSatisfy({ $0.status == 0 && ($0.outcome == .authOrConnectionFailure || $0.outcome == .expired) }) {
            throw FanoutError(.unavailable, "\(host): \(answers[0].summary)")
        }
    }

    // MARK: The kept connection

    private func wait<T>(_ requests: [ChannelManagementRequest], _ interpret: @Sendable ([Answer]) throws(FanoutError) -> T)
        throws(FanoutError) -> T {
        let pool = try admit()
        defer { outstanding.subtract(1, ordering: .relaxed) }
        let answers = pool.perform(requests.map(ConnectionPool.Request.init), timeout: timeout)
        try Self.checkReached(answers, host: "\(manage.host):\(manage.port)")
        return try interpret(answers)
    }

    private func call<T>(_ requests: [ChannelManagementRequest], _ interpret: @escaping @Sendable ([Answer]) throws(FanoutError) -> T,
                         completion: @escaping @Sendable (Result<T, FanoutError>) -> Void) {
        let pool: ConnectionPool
        do { pool = try admit() } catch { return completion(.failure(error)) }
        let host = "\(manage.host):\(manage.port)"
        pool.submit(requests.map(ConnectionPool.Request.init), deadline: MonotonicInstant.now() + timeout) { [self] answers in
            outstanding.subtract(1, ordering: .relaxed)
            completion(Result { () throws(FanoutError) -> T in
                try Self.checkReached(answers, host: host)
                return try interpret(answers)
            })
        }
    }

    /// Counts the call in (or refuses it: too many waiting, shut down, a key that cannot sign, no
    /// descriptor for a connection) and returns the pool to send it on.
    private func admit() throws(FanoutError) -> ConnectionPool {
        if let tokens {
            // Signed here first: a key that cannot sign is a configuration error (78), not an outage.
            var lease: ProviderTokenLease?
            do { _ = try tokens.token(for: &lease) } catch { throw FanoutError(.config, error.description) }
        }
        guard outstanding.add(1, ordering: .relaxed).newValue <= Self.maximumQueued else {
            outstanding.subtract(1, ordering: .relaxed)
            throw FanoutError(.busy, "\(Self.maximumQueued) channel requests of \(bundle.text) are already waiting for APNs")
        }
        do { return try currentPool() } catch {
            outstanding.subtract(1, ordering: .relaxed)
            throw error
        }
    }

    private func currentPool() throws(FanoutError) -> ConnectionPool {
        let result = pool.withLock { (pool) -> Result<(ConnectionPool, replaced: ConnectionPool?), FanoutError> in
            if closed.load(ordering: .acquiring) { return .failure(FanoutError(.unavailable, "the channel client of \(bundle.text) was shut down")) }
            if let current = pool, current.haltMessage == nil { return .success((current, nil)) }
            do {
                let fresh = try ConnectionPool(configuration: configuration())
                let old = pool
                pool = fresh
                return .success((fresh, old))
            } catch {
                return .failure(FanoutError(.unavailable, "cannot open a connection to the channel host: \(error)"))
            }
        }
        let (current, replaced) = try result.get()
        // A halted pool ends off the caller's thread (it may be the API's): its shutdown waits for
        // its connection to close and joins its loop.
        if let replaced { OSThread.startDetached(name: "sokuho-chanstop") { replaced.shutdown() } }
        return current
    }

    private func configuration() -> PoolConfiguration {
        var configuration = PoolConfiguration(endpoint: manage)
        configuration.connectTimeout = min(manage.connectTimeout, timeout)
        configuration.providerTokens = tokens
        configuration.connections = 1
        configuration.threads = 1
        configuration.streamsPerConnection = Self.maximumInFlight
        // Room for every admitted call's requests (an event creates one channel per group), so
        // `submit` never waits for queue space.
        configuration.queueCapacity = 4 * Self.maximumQueued
        configuration.requestTimeout = timeout
        if let keepalive {
            configuration.keepWarm = true
            configuration.warmOnceUsed = true
            configuration.keepalive = keepalive
        }
        return configuration
    }
}

private extension Result where Failure == FanoutError {
    init(_ body: () throws(FanoutError) -> Success) {
        do { self = .success(try body()) } catch { self = .failure(error) }
    }
}
