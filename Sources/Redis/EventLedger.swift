/// What the cluster answered when an event was offered to it.
public enum EventAcceptance: Sendable, Equatable {
    /// Recorded, and its shards queued on `ClusterKeys.events`.
    case new
    /// This key and serial were accepted before with the same body: nothing new was queued.
    case same
    /// This key and serial were accepted before with another body.
    case conflict
    /// A higher serial of this key was accepted already.
    case superseded(by: UInt32)
}

/// One event serial as the cluster keeps it: its shards and what became of each.
public struct EventLedgerEntry: Sendable, Equatable {
    public struct Shard: Sendable, Equatable {
        /// The node sending it, or that sent it (nil: queued).
        public var owner: String?
        /// The fencing token of the shard's latest lease (0: never leased).
        public var fence: Int64 = 0
        /// The shard's report as its node wrote it when the shard ended (nil: not yet).
        public var report: [UInt8]?

        public init(owner: String? = nil, fence: Int64 = 0, report: [UInt8]? = nil) {
            self.owner = owner
            self.fence = fence
            self.report = report
        }
    }

    public var shards: [Shard]
    /// The node that accepted the event.
    public var acceptedBy: String
    /// When it was accepted (ms since 1970).
    public var acceptedAt: UInt64
    public var isDone: Bool { shards.allSatisfy { $0.report != nil } }

    public init(shards: [Shard], acceptedBy: String, acceptedAt: UInt64) {
        self.shards = shards
        self.acceptedBy = acceptedBy
        self.acceptedAt = acceptedAt
    }
}

/// The cluster's record of events, as atomic Lua scripts (EVAL) on plain hashes and one stream:
/// accepting (dedup by key and serial across every node, then one stream entry per shard, in one
/// step — an event is never recorded without its shards queued, nor queued twice), a shard's owner
/// and its report, both fenced: a node whose lease was taken over cannot overwrite the new
/// holder's record (its token is lower).
extension RedisConnection {
    /// How long the cluster remembers an event's serials and shard reports after its last change.
    public static let eventRetention: Duration = .seconds(30 * 86_400)

    /// Offers an event: key, serial, the SHA-256 of its canonical body, the body, the shard count.
    public func acceptEvent(key: String, serial: UInt32, bodyHash: [UInt8], body: [UInt8], shards: Int, node: String,
                            now: UInt64) throws(RedisError) -> EventAcceptance {
        let script = """
            local max = tonumber(redis.call('HGET', KEYS[1], 'max') or '-1')
            local serial = tonumber(ARGV[1])
            if serial < max then return {'superseded', tostring(max)} end
            local known = redis.call('HGET', KEYS[1], 's' .. ARGV[1])
            if known then
              if known ~= ARGV[2] then return {'conflict', ''} end
              return {'same', ''}
            end
            redis.call('HSET', KEYS[1], 's' .. ARGV[1], ARGV[2], 'max', ARGV[1])
            redis.call('PEXPIRE', KEYS[1], ARGV[8])
            redis.call('HSET', KEYS[2], 'n', ARGV[3], 'body', ARGV[4], 'node', ARGV[5], 'at', ARGV[7])
            redis.call('PEXPIRE', KEYS[2], ARGV[8])
            for i = 0, tonumber(ARGV[3]) - 1 do
              redis.call('XADD', KEYS[3], '*', 'key', ARGV[6], 'serial', ARGV[1], 'shard', tostring(i), 'count', ARGV[3])
            end
            return {'new', ''}
            """
        let reply = try eval(script, keys: [ClusterKeys.eventSerials(key), ClusterKeys.eventShards(key, serial: serial), ClusterKeys.events],
                             arguments: [.integer(serial), .data(bodyHash), .integer(shards), .data(body), .text(node), .text(key),
                                         .integer(now), .milliseconds(Self.eventRetention)])
        guard case let .array(parts) = reply, parts.count == 2, let verdict = parts[0].text else {
            throw .unexpectedReply(command: "EVAL (accept event)", reply: reply.description)
        }
        switch verdict {
        case "new": return .new
        case "same": return .same
        case "conflict": return .conflict
        case "superseded":
            guard let higher = parts[1].text.flatMap(UInt32.init) else { throw .unexpectedReply(command: "EVAL (accept event)", reply: reply.description) }
            return .superseded(by: higher)
        default: throw .unexpectedReply(command: "EVAL (accept event)", reply: reply.description)
        }
    }

    /// The event's body as accepted; nil when the cluster no longer (or never) knew it.
    public func eventBody(key: String, serial: UInt32) throws(RedisError) -> [UInt8]? {
        let reply = try command(["HGET", .text(ClusterKeys.eventShards(key, serial: serial)), "body"])
        if case let .bytes(body) = reply { return body }
        return nil
    }

    /// The event's shards and their state; nil when the cluster does not know it.
    public func eventLedger(key: String, serial: UInt32) throws(RedisError) -> EventLedgerEntry? {
        let reply = try command(["HGETALL", .text(ClusterKeys.eventShards(key, serial: serial))])
        guard case let .array(items) = reply else { throw .unexpectedReply(command: "HGETALL", reply: reply.description) }
        var fields: [String: [UInt8]] = [:]
        var index = 0
        while index + 1 < items.count {
            if let name = items[index].text, case let .bytes(value) = items[index + 1] { fields[name] = value }
            index += 2
        }
        func text(_ name: String) -> String? { fields[name].map { String(decoding: $0, as: UTF8.self) } }
        guard let count = text("n").flatMap(Int.init), count > 0 else { return nil }
        var entry = EventLedgerEntry(shards: Array(repeating: EventLedgerEntry.Shard(), count: count), acceptedBy: text("node") ?? "",
                                     acceptedAt: text("at").flatMap(UInt64.init) ?? 0)
        for shard in 0..<count {
            entry.shards[shard].owner = text("o\(shard)")
            entry.shards[shard].fence = text("f\(shard)").flatMap(Int64.init) ?? 0
            entry.shards[shard].report = fields["r\(shard)"]
        }
        return entry
    }

    /// Records `node` as the shard's owner under fencing token `fence`; false when a higher token
    /// was recorded already (someone took the shard over since) or the shard is done.
    public func claimShard(key: String, serial: UInt32, shard: Int, node: String, fence: Int64) throws(RedisError) -> Bool {
        let script = """
            if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
            if redis.call('HEXISTS', KEYS[1], 'r' .. ARGV[1]) == 1 then return 0 end
            local seen = tonumber(redis.call('HGET', KEYS[1], 'f' .. ARGV[1]) or '0')
            if tonumber(ARGV[3]) < seen then return 0 end
            redis.call('HSET', KEYS[1], 'o' .. ARGV[1], ARGV[2], 'f' .. ARGV[1], ARGV[3])
            return 1
            """
        return try fencedScript(script, key: key, serial: serial, arguments: [.integer(shard), .text(node), .integer(fence)], what: "claim shard")
    }

    /// Records the shard's report (its owner stays recorded: who sent it) — only under the highest
    /// fencing token recorded for it. False: a later holder's token is there; this report is stale.
    public func finishShard(key: String, serial: UInt32, shard: Int, fence: Int64, report: [UInt8]) throws(RedisError) -> Bool {
        let script = """
            if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
            local seen = tonumber(redis.call('HGET', KEYS[1], 'f' .. ARGV[1]) or '0')
            if tonumber(ARGV[2]) < seen then return 0 end
            redis.call('HSET', KEYS[1], 'r' .. ARGV[1], ARGV[3], 'f' .. ARGV[1], ARGV[2])
            return 1
            """
        return try fencedScript(script, key: key, serial: serial, arguments: [.integer(shard), .integer(fence), .data(report)], what: "finish shard")
    }

    private func fencedScript(_ script: String, key: String, serial: UInt32, arguments: [RedisArgument], what: String) throws(RedisError) -> Bool {
        let reply = try eval(script, keys: [ClusterKeys.eventShards(key, serial: serial)], arguments: arguments)
        guard case let .integer(changed) = reply else { throw .unexpectedReply(command: "EVAL (\(what))", reply: reply.description) }
        return changed == 1
    }
}

/// Each shard's start checkpoints, kept in Redis so the node that takes a shard over resumes where
/// its last holder recorded it was — not from the beginning (every phone of the shard twice), and
/// not from a peer's copy that a partition kept from arriving. Kept per event key and shard, not
/// per serial: a later serial's widening starts continue from the shard's earlier passes.
extension RedisConnection {
    /// `sokuho:progress:<key>/<shard>/<count>`: topic → the store's start-progress record.
    public static func shardProgressKey(_ eventKey: String, shard: Int, count: Int) -> String { "sokuho:progress:\(eventKey)/\(shard)/\(count)" }

    /// A checkpoint's answer segment (the start records' `AnswerLog`): its number, the lowest
    /// segment still needed (the ones below are dropped), and its hashes as the store encodes them.
    public struct AnswerSegment: Sendable, Equatable {
        public var number: UInt32
        public var firstKept: UInt32
        public var bytes: [UInt8]

        public init(number: UInt32, firstKept: UInt32, bytes: [UInt8]) {
            self.number = number
            self.firstKept = firstKept
            self.bytes = bytes
        }
    }

    /// What became of a shard's checkpoint sent to Redis.
    public enum ProgressSave: Sendable, Equatable {
        /// Recorded.
        case saved
        /// Recorded; a higher serial of the key was accepted since: the shard stops handing out
        /// (the later serial's shard resumes from this checkpoint).
        case superseded(by: UInt32)
        /// Not recorded: a later holder's fencing token is there; this node no longer holds the shard.
        case refused
    }

    /// Records a checkpoint of shard `shard` under fencing token `fence` — refused when a
    /// later holder's token is recorded for the serial: this node is no longer the shard's holder.
    /// In the same step, says whether a higher serial of the key was accepted (no round trip more).
    /// `answers`: the checkpoint's answer segment, written beside the record under field
    /// topic NUL number (topics hold no control characters), the segments below its `firstKept`
    /// dropped; nil (the record holds every answer) drops them all. Fields topic NUL "k" and
    /// topic NUL "n" keep the lowest and highest segment numbers, so dropping never scans.
    public func saveShardProgress(key: String, serial: UInt32, shard: Int, count: Int, fence: Int64, topic: String,
                                  record: [UInt8], answers: AnswerSegment? = nil) throws(RedisError) -> ProgressSave {
        let script = """
            local seen = tonumber(redis.call('HGET', KEYS[1], 'f' .. ARGV[1]) or '0')
            if tonumber(ARGV[2]) < seen then return -1 end
            local topic = ARGV[3]
            redis.call('HSET', KEYS[2], topic, ARGV[4])
            local low = tonumber(redis.call('HGET', KEYS[2], topic .. '\0k') or '0')
            local high = tonumber(redis.call('HGET', KEYS[2], topic .. '\0n') or '-1')
            local keep = high + 1
            if ARGV[6] ~= '' then
                local number = tonumber(ARGV[6])
                if ARGV[8] ~= '' then
                    redis.call('HSET', KEYS[2], topic .. '\0' .. number, ARGV[8])
                    if number > high then high = number end
                end
                keep = tonumber(ARGV[7])
            end
            for number = low, math.min(keep, high + 1) - 1 do redis.call('HDEL', KEYS[2], topic .. '\0' .. number) end
            if ARGV[6] ~= '' then
                redis.call('HSET', KEYS[2], topic .. '\0k', math.max(low, keep), topic .. '\0n', high)
            else
                redis.call('HDEL', KEYS[2], topic .. '\0k', topic .. '\0n')
            end
            redis.call('PEXPIRE', KEYS[2], ARGV[5])
            return tonumber(redis.call('HGET', KEYS[3], 'max') or '0')
            """
        let segment: [RedisArgument] = answers.map { [.integer(Int($0.number)), .integer(Int($0.firstKept)), .data($0.bytes)] }
            ?? [.text(""), .text(""), .text("")]
        let reply = try eval(script, keys: [ClusterKeys.eventShards(key, serial: serial), Self.shardProgressKey(key, shard: shard, count: count),
                                            ClusterKeys.eventSerials(key)],
                             arguments: [.integer(shard), .integer(fence), .text(topic), .data(record), .milliseconds(Self.eventRetention)] + segment)
        guard case let .integer(highest) = reply else { throw .unexpectedReply(command: "EVAL (save shard progress)", reply: reply.description) }
        if highest < 0 { return .refused }
        return highest > Int64(serial) ? .superseded(by: UInt32(clamping: highest)) : .saved
    }

    /// The highest serial of `key` the cluster accepted, when it is above `serial` (nil: none is,
    /// or the cluster no longer knows the key).
    public func newerSerial(key: String, than serial: UInt32) throws(RedisError) -> UInt32? {
        let reply = try command(["HGET", .text(ClusterKeys.eventSerials(key)), "max"])
        guard let highest = reply.text.flatMap(UInt32.init), highest > serial else { return nil }
        return highest
    }

    /// The shard's recorded checkpoints, by topic, each with its answer segments (number, bytes).
    public func shardProgress(key: String, shard: Int, count: Int) throws(RedisError)
        -> [(topic: String, record: [UInt8], segments: [(number: UInt32, bytes: [UInt8])])] {
        let reply = try command(["HGETALL", .text(Self.shardProgressKey(key, shard: shard, count: count))])
        guard case let .array(items) = reply else { throw .unexpectedReply(command: "HGETALL", reply: reply.description) }
        var records: [(topic: String, record: [UInt8])] = []
        var segments: [String: [(number: UInt32, bytes: [UInt8])]] = [:]
        var index = 0
        while index + 1 < items.count {
            if let field = items[index].text, case let .bytes(value) = items[index + 1] {
                if let nul = field.utf8.firstIndex(of: 0) {
                    let topic = String(field[..<nul])
                    if let number = UInt32(String(field[field.utf8.index(after: nul)...])) { segments[topic, default: []].append((number, value)) }
                } else {
                    records.append((field, value))
                }
            }
            index += 2
        }
        return records.map { ($0.topic, $0.record, segments[$0.topic] ?? []) }
    }
}
