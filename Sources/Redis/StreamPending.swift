// The consumer groups' side of a stream: entries delivered to a consumer and not yet
// acknowledged, which another consumer takes over when their holder died (XAUTOCLAIM).

/// What XAUTOCLAIM took over: the entries now owned by the claiming consumer, where to continue the
/// scan (`next`, `.zero` when the pending list was scanned to its end) and the ids of pending entries
/// that were no longer in the stream (Redis 7 removes them from the pending list).
public struct AutoClaim: Sendable, Equatable {
    public let next: StreamID
    public let entries: [StreamEntry]
    public let deleted: [StreamID]
}

/// XPENDING's summary of a group: how many entries are delivered but not acknowledged, the lowest
/// and highest of their ids, and how many each consumer holds.
public struct PendingSummary: Sendable, Equatable {
    public let count: Int64
    public let lowest: StreamID?
    public let highest: StreamID?
    public let consumers: [String: Int64]
}

/// The pending entries of a consumer group, as typed calls.
extension RedisConnection {
    /// XACK → how many of `ids` were pending (and are not any more).
    @discardableResult
    public func acknowledge(_ ids: [StreamID], on stream: String, group: String) throws(RedisError) -> Int64 {
        guard !ids.isEmpty else { return 0 }
        let reply = try command(["XACK", .text(stream), .text(group)] + ids.map { .text($0.description) })
        guard case let .integer(count) = reply else { throw .unexpectedReply(command: "XACK", reply: reply.description) }
        return count
    }

    /// XCLAIM `stream` `group` `consumer` 0 `id` JUSTID: makes `id` this consumer's and resets its
    /// idle time, so XAUTOCLAIM elsewhere does not take it while its holder still works on it (and
    /// a lease proves the holder is the right one). False when the entry is no longer pending.
    public func keepClaimed(_ id: StreamID, on stream: String, group: String, for consumer: String) throws(RedisError) -> Bool {
        let reply = try command(["XCLAIM", .text(stream), .text(group), .text(consumer), "0", .text(id.description), "JUSTID"])
        guard case let .array(ids) = reply else { throw .unexpectedReply(command: "XCLAIM", reply: reply.description) }
        return !ids.isEmpty
    }

    /// XAUTOCLAIM `stream` `group` `consumer` `minIdle` `start` COUNT `count` (Redis ≥ 6.2): takes over
    /// entries pending longer than `minIdle` with another consumer (one that died before XACK).
    public func autoClaim(on stream: String, group: String, for consumer: String, minIdle: Duration,
                          start: StreamID = .zero, count: Int = 100) throws(RedisError) -> AutoClaim {
        let reply = try command(["XAUTOCLAIM", .text(stream), .text(group), .text(consumer), .milliseconds(minIdle),
                                 .text(start.description), "COUNT", .integer(count)])
        // Redis 7: [next, entries, deleted ids]; 6.2: [next, entries].
        guard case let .array(parts) = reply, parts.count == 2 || parts.count == 3,
              let nextText = parts[0].text, let next = StreamID(nextText) else {
            throw .unexpectedReply(command: "XAUTOCLAIM", reply: reply.description)
        }
        let entries = try Self.entries(parts[1], command: "XAUTOCLAIM")
        var deleted: [StreamID] = []
        if parts.count == 3 {
            guard case let .array(ids) = parts[2] else { throw .unexpectedReply(command: "XAUTOCLAIM", reply: reply.description) }
            for id in ids {
                guard let text = id.text, let parsed = StreamID(text) else { throw .unexpectedReply(command: "XAUTOCLAIM", reply: reply.description) }
                deleted.append(parsed)
            }
        }
        return AutoClaim(next: next, entries: entries.filter { !$0.trimmed }, deleted: deleted)
    }

    /// XPENDING `stream` `group`: the group's summary.
    public func pending(on stream: String, group: String) throws(RedisError) -> PendingSummary {
        let reply = try command(["XPENDING", .text(stream), .text(group)])
        guard case let .array(parts) = reply, parts.count == 4, case let .integer(count) = parts[0] else {
            throw .unexpectedReply(command: "XPENDING", reply: reply.description)
        }
        var consumers: [String: Int64] = [:]
        if case let .array(rows) = parts[3] {
            for row in rows {
                guard case let .array(pair) = row, pair.count == 2, let name = pair[0].text,
                      let text = pair[1].text, let held = Int64(text) else {
                    throw .unexpectedReply(command: "XPENDING", reply: reply.description)
                }
                consumers[name] = held
            }
        }
        return PendingSummary(count: count, lowest: parts[1].text.flatMap(StreamID.init), highest: parts[2].text.flatMap(StreamID.init),
                              consumers: consumers)
    }
}
