// Fanout — events, for `sokuho fanout`, the daemon's queue and a cluster's shards alike (README,
// "Events").
// - `FanoutEvent`: the event as read.
// - `EventAdmission`: the one statement of the key/serial/body rules (superseded, conflict, already
//   sent, resume, new), which the CLI and the daemon each word their own way.
// - `EventRun`: one run in phases, a method and file each: admit → plan starts → channels → send →
//   settle → record; `Fanout.run` builds and drives it.
// - `StartScanner`: the start passes — the store scanned 4,096 targets at a time, pushes handed out
//   in chunks whose checkpoint is written first; with an Android side, a pass's FCM tokens are a
//   second scan taking turns with the first, in a window and gate of their own
//   (`StartScan+Decide.swift`: the per-target decision).
// - `FanoutSink`: the run's books behind one private lock, taken per chunk, never per push:
//   outcomes, scan windows, the circuit breaker, prunes.
// - `CheckpointJournal`: where start checkpoints go besides the store, and the stop signal (a
//   cluster shard's Redis copy and lease).
// - `StopReason`: why a run stopped, as a case; its text is the report's `stopped`.
// - `ChannelClient`: channel create/read/delete and broadcasts.

import Sender
import TokenStore

/// How a fan-out reaches APNs and what it may do beyond the event's own fields.
public struct FanoutOptions: Sendable {
    /// The push host's pool (device pushes and broadcasts); its provider tokens also sign the
    /// channel requests.
    public var pool: PoolConfiguration
    /// The channel-management host (channel create/read/delete).
    public var manage: ProviderEndpoint
    /// The app's kept channel-host connection (the daemon's, shared by its events and routes);
    /// nil: the run opens one from `manage` when it needs it and closes it at the end.
    public var channels: ChannelClient?
    /// The push-to-start budget: a phone that got `startLimit` starts from other events within
    /// `startWindow` gets no more (nil: no limit).
    public var startLimit: Int? = 8
    public var startWindow: Duration = .seconds(3600)
    /// `end` deletes the event's auto channels unless this is set.
    public var keepChannels = false
    /// `--log FILE`: one JSON line per push.
    public var logPath: String?
    /// A long-lived pool to send through (the daemon's warm connections, shared by its events);
    /// nil: the run opens its own from `pool` and closes it at the end.
    public var sharedPool: ConnectionPool?
    /// Whether this event's pushes overtake the queued pushes of other events on a shared pool
    /// (an earthquake start while an election update fans out).
    public var urgent = false
    /// Called about every 200 ms with (answered, handed out) while the fan-out runs.
    public var progress: (@Sendable (Int, Int) -> Void)?
    /// Where start checkpoints go besides the store, and who may stop the run: a cluster node's
    /// shard worker (`CheckpointJournal`). Nil: the store alone, and nothing stops the run from outside.
    public var journal: (any CheckpointJournal)?
    /// The app's Android phones (FCM); nil: the event reaches iOS phones only.
    public var android: FCMLane?
    /// Asked with the journal's `stopReason`: a later serial of the event's key waiting to run
    /// (the daemon's queue runs one serial of a key at a time). The run then hands out nothing
    /// more, settles what it sent and ends done with `FanoutReport.supersededBy`; the later serial
    /// starts the phones it had not reached — one start per phone per key, not per serial.
    public var supersededBy: (@Sendable () -> UInt32?)?

    public init(pool: PoolConfiguration, manage: ProviderEndpoint) {
        self.pool = pool
        self.manage = manage
    }
}

/// What a fan-out did: the report, whether this run only found the serial already sent, and the
/// samples a chart draws.
public struct FanoutResult: Sendable {
    public var report: FanoutReport
    /// The same key, serial and body were sent before: nothing was sent now.
    public var alreadySent = false
    /// (seconds since the start of the run, delivered so far).
    public var delivered: [(seconds: Double, count: Int)] = []
    /// Each lane's latencies, from a push's first submission to its final answer (nil: the
    /// lane sent nothing).
    public var latencies = PerLane<LatencyHistogram?> { _ in nil }
    /// Every lane's latencies together.
    public var latency: LatencyHistogram {
        var all = LatencyHistogram()
        for case let (_, histogram?) in latencies.all { all.merge(histogram) }
        return all
    }
    /// The highest resident memory seen while the fan-out ran (sampled every 200 ms).
    public var peakMemory = MemoryUse()
    /// Why this run stopped early, if it did (`report.stopped` is its text; nil when the serial
    /// was already sent).
    public var stopped: StopReason?
}

/// The product's main job: one event from the token store to every phone it concerns, through
/// the connection pool — scan → starts per group (each phone once) → pool → outcomes → store
/// writes (checkpoints, pruning). See the README's "Events" section for the semantics, and
/// `EventRun` for the phases.
public enum Fanout {
    /// Runs `event` phase by phase (`EventRun`): admitted against its key's records, sent, settled
    /// and recorded. Throws what keeps it from running; a run that stopped part-way returns its
    /// report with the reason.
    public static func run(_ event: FanoutEvent, store: TokenStore, options: FanoutOptions) throws(FanoutError) -> FanoutResult {
        try EventRun(event, store: store, options: options).run()
    }
}
