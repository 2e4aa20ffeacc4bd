import Cluster
import Fanout
import Redis
import TokenStore
import Vocabulary

/// The first problem noted from any thread (the checkpoint hook runs on the fan-out's threads).
final class FirstProblem: Sendable {
    private let problem = Lock<String?>(nil)
    package var value: String? { problem.withLock { $0 } }
    package func note(_ text: String) { problem.withLock { if $0 == nil { $0 = text } } }
}

/// A shard's run journal: its checkpoints copied to Redis under the lease's fencing token (a
/// later holder's token refuses them), and the lease as the stop signal.
final class ShardJournal: CheckpointJournal {
    let keeper: ShardLease
    let link: ClusterLink
    let key: String
    let serial: UInt32
    let shard: EventShard
    /// Receives the reason a checkpoint could not be recorded (the run stops then).
    let unrecorded: FirstProblem
    /// A later serial of the key, once a checkpoint's answer said one was accepted.
    let newer = Lock<UInt32?>(nil)

    init(keeper: ShardLease, link: ClusterLink, key: String, serial: UInt32, shard: EventShard, unrecorded: FirstProblem) {
        self.keeper = keeper
        self.link = link
        self.key = key
        self.serial = serial
        self.shard = shard
        self.unrecorded = unrecorded
    }

    func stopReason() -> StopReason? {
        if let lost = keeper.lostReason { return .leaseLost(lost) }
        return newer.withLock { $0 }.map { .superseded(by: $0) }
    }

    func record(_ progress: StartProgress) -> StopReason? {
        do {
            let saved = try link.run { connection throws(RedisError) in
                try connection.saveShardProgress(key: key, serial: serial, shard: shard.index, count: shard.count, fence: keeper.lease.token,
                                                 topic: progress.topic, record: progress.recordBytes,
                                                 answers: progress.answerLog.map {
                                                     RedisConnection.AnswerSegment(number: $0.segment, firstKept: $0.firstKept,
                                                                                   bytes: progress.answered.isEmpty ? [] : AnswerLog.encode(progress.answered))
                                                 })
            }
            switch saved {
            case .saved: return nil
            case let .superseded(by: serial):
                newer.withLock { $0 = serial }
                return .superseded(by: serial)
            case .refused: return .leaseLost("the shard was taken over by another node (a later fencing token)")
            }
        } catch {
            let problem = "the shard's checkpoint could not be recorded in Redis (\(error))"
            unrecorded.note(problem)
            return .checkpointFailed(problem)
        }
    }
}
