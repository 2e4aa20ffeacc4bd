import TokenStore

/// Where a run's start checkpoints go besides the store, and who may stop the run from outside.
/// A cluster node's shard worker (`ShardWorkers`) copies every checkpoint to Redis under the
/// shard's lease, so the node that takes the shard over resumes from there, and stops the run
/// when the lease is gone. A run without one (`sokuho fanout`, a daemon alone) keeps its
/// checkpoints in the store only.
///
/// Both are called from the run's own thread, per chunk or batch of targets (never per push),
/// and while the run waits for room or answers.
public protocol CheckpointJournal: Sendable {
    /// Asked before each batch of targets (4,096) and while waiting for room: a reason ends the run
    /// at once — nothing more is handed to the pool, the chunk waiting is neither recorded nor
    /// sent (whoever resumes the event sends it), and the report says `stopped`.
    func stopReason() -> StopReason?

    /// Called with every start checkpoint after the store has it, before the pushes it covers go
    /// out: a reason stops the run after the chunk under way (its pushes are counted in flight
    /// already). Also called with the checkpoints written while waiting for the last answers (a
    /// reason is ignored then: nothing more is sent anyway) and with the final ones (a reason
    /// becomes the run's stop reason if it has none).
    func record(_ progress: StartProgress) -> StopReason?
}

/// A run's start checkpoints: the store's copy first (what this process resumes from after a
/// crash), then the journal's. The three moments a run checkpoints differ in how they write.
struct StartCheckpoints {
    let store: TokenStore
    let journal: (any CheckpointJournal)?
    /// A later serial of the event's key, once one is waiting (`FanoutOptions.supersededBy`).
    var supersededBy: (@Sendable () -> UInt32?)? = nil

    func stopReason() -> StopReason? {
        if let newer = supersededBy?() { return .superseded(by: newer) }
        return journal?.stopReason()
    }

    /// Before a chunk goes out: into the store without an fsync (it survives `kill -9`, which is
    /// what it guards against), waited for; then to the journal unless the run is already told to
    /// stop (`journaled: false`). A store failure ends the run as an error.
    func beforeChunk(_ progress: StartProgress, journaled: Bool) throws(FanoutError) -> StopReason? {
        do { try store.write([.putStartProgress(progress)], durable: false) } catch { throw FanoutError(.store, error.description) }
        return journaled ? journal?.record(progress) : nil
    }

    /// While waiting for the last answers: queued to the store's writer and not waited for (a
    /// failure here is covered by the next one or the final record), and journaled without a
    /// say: nothing more is sent. `written` runs once the store has it (or could not take it: the
    /// room it gives back must not leak either way).
    func whileSettling(_ progress: [StartProgress], written: @escaping @Sendable () -> Void) {
        do { try store.submit(progress.map { .putStartProgress($0) }, durable: false) { _ in written() } } catch { written() }
        for checkpoint in progress { _ = journal?.record(checkpoint) }
    }

    /// The final records, synced, then every start progress among them journaled; the first
    /// reason the journal gives.
    func final(_ writes: [WriteOperation]) throws(FanoutError) -> StopReason? {
        do { _ = try store.write(writes) } catch { throw FanoutError(.store, error.description) }
        var first: StopReason?
        for case let .putStartProgress(progress) in writes {
            if let reason = journal?.record(progress) { first = first ?? reason }
        }
        return first
    }
}
