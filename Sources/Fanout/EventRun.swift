import APNs
import IO
import Sender
import TokenStore
import Vocabulary

/// One run of one event, in the order its phases happen, each a method of its own:
///
/// 1. `admit` — the serial's rules (`EventAdmission`), then its record written before anything is
///    sent, so a crash from there on is resumed, never repeated blind;
/// 2. `planStarts` — which start passes the event needs and with what content;
/// 3. `channels` — each group's channel, auto ones created when starts will subscribe phones;
/// 4. `send` — broadcasts and activity updates (updates, ends), then the start scans;
/// 5. `settle` — the last answers, the breaker's verdict, the final start checkpoints;
/// 6. `record` — pruning, an end's channel clean-up, the report and the serial's final record.
///
/// Each phase hands the next what it found as a value; the run itself holds only what it was
/// given and what it opened (closed at its end, whichever way it ends). `Fanout.run` builds and
/// drives one; the run happens on the caller's thread, the pool's loops answer through its sink.
final class EventRun {
    let event: FanoutEvent
    let store: TokenStore
    let options: FanoutOptions
    /// When this run began: the wall clock for records, the monotonic clock for the report.
    let startedAt = WallClock.milliseconds()
    let runStart = MonotonicInstant.now()
    let checkpoints: StartCheckpoints
    /// What the run opened itself (the daemon lends its own, kept between events).
    private var ownedChannels: ChannelClient?
    private var ownedPool: ConnectionPool?
    private var ownedAndroidPool: ConnectionPool?

    init(_ event: FanoutEvent, store: TokenStore, options: FanoutOptions) {
        self.event = event
        self.store = store
        self.options = options
        checkpoints = StartCheckpoints(store: store, journal: options.journal, supersededBy: options.supersededBy)
    }

    func run() throws(FanoutError) -> FanoutResult {
        defer { close() }
        let admitted: Admitted
        switch try admit() {
        case let .alreadySent(report): return FanoutResult(report: report, alreadySent: true)
        case let .run(run): admitted = run
        }
        let client = channelClient()
        let starts = planStarts(admitted)
        let channels = try channels(creating: !starts.plans.isEmpty, client: client)
        let sending = try send(admitted, starts: starts, channels: channels)
        // However the run ends, the room its answers hold in the pool's gate goes back.
        defer { sending.sink.detachFromGate() }
        let settled = try settle(sending, deadline: admitted.clock.deadline)
        return try record(admitted, channels: channels, sending: sending, settled: settled)
    }

    // MARK: What the phases hand on

    /// What `admit` found: nothing to send, or a run to make.
    enum Admission {
        case alreadySent(FanoutReport)
        case run(Admitted)
    }

    /// An admitted run: the key's records as they were, the serial's record as written now, the
    /// report of the runs before this one (a resume), and the event's clock.
    struct Admitted {
        let serials: [EventSerialRecord]
        let starts: [StartProgress]
        let record: EventSerialRecord
        let earlier: FanoutReport?
        let clock: EventClock
    }

    /// The event's clock: its deadline and expiration run from its first run, not this one.
    struct EventClock {
        let deadline: MonotonicInstant
        let timestamp: Int64
        let expiration: Expiration
    }

    /// The start passes the event needs and the content its starts carry (nil: no starts).
    struct Starts {
        var plans: [StartPlan]
        let content: EventPushes.StartContent?
    }

    /// Each group's channel (by group index) and the client that reached them.
    struct Channels {
        let client: ChannelClient
        let ids: [Int: (id: ChannelID, policy: MessageStoragePolicy)]
    }

    /// What is under way once everything is handed out: the books, the scanner that holds the
    /// start passes' state, the pool, the samples, and when the scan began (the settle phase's
    /// checkpoints run a second from there).
    struct Sending {
        let sink: FanoutSink
        let scanner: StartScanner
        let pool: ConnectionPool
        let samples: RunSamples
        let scanStarted: MonotonicInstant
        /// What a provider could not carry (`EventPushes.refusals`), for the report.
        let warnings: [String]
        /// An update's or end's answers as the store keeps them (nil for a start).
        let updates: UpdateLedger?
    }

    /// How sending ended: why it stopped (nil: it did not), and the event's retries and latencies.
    struct Settled {
        let stopped: StopReason?
        let retries: Int
        let latencies: PerLane<LatencyHistogram?>
    }

    // MARK: What the run opens

    /// The app's kept channel-host connection, or one of the run's own (opened on first use).
    private func channelClient() -> ChannelClient {
        if let shared = options.channels { return shared }
        let client = ChannelClient(bundle: event.app, manage: options.manage, tokens: options.pool.providerTokens, timeout: .seconds(30))
        ownedChannels = client
        return client
    }

    /// The shared pool, or one of the run's own.
    func pool() throws(FanoutError) -> ConnectionPool {
        if let shared = options.sharedPool { return shared }
        var configuration = options.pool
        configuration.keepsResponseIDs = options.logPath != nil
        let pool: ConnectionPool
        do { pool = try ConnectionPool(configuration: configuration) } catch {
            throw FanoutError(.unavailable, "cannot start the connection pool: \(error)")
        }
        ownedPool = pool
        return pool
    }

    /// The shared FCM pool, or one of the run's own; nil without an Android lane.
    func androidPool() throws(FanoutError) -> ConnectionPool? {
        guard let lane = options.android else { return nil }
        if let shared = lane.sharedPool { return shared }
        let pool: ConnectionPool
        do { pool = try ConnectionPool(configuration: lane.pool) } catch {
            throw FanoutError(.unavailable, "cannot start the FCM connection pool: \(error)")
        }
        ownedAndroidPool = pool
        return pool
    }

    private func close() {
        ownedPool?.shutdown()
        ownedAndroidPool?.shutdown()
        ownedChannels?.shutdown()
    }

    func storeCall<T>(_ body: () throws(StoreError) -> T) throws(FanoutError) -> T {
        do { return try body() } catch { throw FanoutError(.store, error.description) }
    }
}
