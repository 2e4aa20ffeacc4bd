/// A stream entry id, "<milliseconds>-<sequence>"; ordered as Redis orders them.
public struct StreamID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let milliseconds: UInt64
    public let sequence: UInt64

    public init(milliseconds: UInt64, sequence: UInt64) {
        self.milliseconds = milliseconds
        self.sequence = sequence
    }

    /// Parses "1700000000000-3" (or "5", sequence 0).
    public init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count <= 2, let ms = UInt64(parts[0]) else { return nil }
        let seq = parts.count == 2 ? UInt64(parts[1]) : 0
        guard let seq else { return nil }
        milliseconds = ms
        sequence = seq
    }

    /// "0-0": before every entry.
    public static let zero = StreamID(milliseconds: 0, sequence: 0)

    public var description: String { "\(milliseconds)-\(sequence)" }

    public static func < (a: StreamID, b: StreamID) -> Bool { (a.milliseconds, a.sequence) < (b.milliseconds, b.sequence) }
}

/// One stream entry: its id and its fields in order. An entry a consumer group still lists as
/// pending but that trimming removed from the stream comes back with no fields and `trimmed` set.
public struct StreamEntry: Sendable, Equatable {
    public struct Field: Sendable, Equatable {
        public let name: String
        public let value: [UInt8]
        public init(_ name: String, _ value: [UInt8]) { self.name = name; self.value = value }
        public init(_ name: String, _ text: String) { self.init(name, Array(text.utf8)) }
    }

    public let id: StreamID
    public let fields: [Field]
    public let trimmed: Bool

    public init(id: StreamID, fields: [Field], trimmed: Bool = false) {
        self.id = id
        self.fields = fields
        self.trimmed = trimmed
    }

    /// The first field called `name`.
    public subscript(name: String) -> [UInt8]? { fields.first { $0.name == name }?.value }
    /// The first field called `name`, as UTF-8 text.
    public func text(_ name: String) -> String? { self[name].map { String(decoding: $0, as: UTF8.self) } }
}

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

/// XINFO STREAM's figures of a stream's head and tail. `entriesAdded` (Redis ≥ 7, nil before) minus
/// `length` is how many entries trimming (or XDEL) removed: trimming removes the oldest, and it
/// does not move `max-deleted-entry-id`, which is why that figure is not used.
public struct StreamHead: Sendable, Equatable {
    public let length: Int64
    public let entriesAdded: Int64?
    /// The oldest entry still in the stream (nil: empty).
    public let firstEntry: StreamID?
    public let lastGenerated: StreamID

    public init(length: Int64, entriesAdded: Int64?, firstEntry: StreamID?, lastGenerated: StreamID) {
        self.length = length
        self.entriesAdded = entriesAdded
        self.firstEntry = firstEntry
        self.lastGenerated = lastGenerated
    }
}

/// The stream commands the cluster uses, as typed calls. Stream and group names are plain keys.
extension RedisConnection {
    /// XADD `stream` [MAXLEN ~ `maxLength`] * fields… → the new entry's id. With `maxLength`, Redis
    /// trims the oldest entries, approximately (whole macro nodes), so the stream stays near it.
    @discardableResult
    public func add(to stream: String, _ fields: [StreamEntry.Field], maxLength: Int? = nil) throws(RedisError) -> StreamID {
        var arguments: [RedisArgument] = ["XADD", .text(stream)]
        if let maxLength { arguments += ["MAXLEN", "~", .integer(maxLength)] }
        arguments.append("*")
        for field in fields { arguments += [.text(field.name), .data(field.value)] }
        let reply = try command(arguments)
        guard let text = reply.text, let id = StreamID(text) else { throw .unexpectedReply(command: "XADD", reply: reply.description) }
        return id
    }

    /// XGROUP CREATE `stream` `group` `start` MKSTREAM → true when created, false when the group
    /// already existed (BUSYGROUP: several nodes create it at start). `start` "$" delivers only
    /// entries added from now on, "0" the whole stream.
    @discardableResult
    public func createGroup(_ group: String, on stream: String, startingAt start: String = "$") throws(RedisError) -> Bool {
        do throws(RedisError) {
            try command(["XGROUP", "CREATE", .text(stream), .text(group), .text(start), "MKSTREAM"])
            return true
        } catch where error.serverCode == "BUSYGROUP" {
            return false
        }
    }

    /// XREADGROUP GROUP `group` `consumer` [COUNT] [BLOCK] STREAMS … — `after` ">" for entries never
    /// delivered to the group, or an id for this consumer's own pending entries after it. Waits up to
    /// `block` for new entries; returns the entries per stream, in the order asked, empty on timeout.
    public func readGroup(_ group: String, as consumer: String, streams: [(stream: String, after: String)],
                          count: Int? = nil, block: Duration? = nil) throws(RedisError) -> [(stream: String, entries: [StreamEntry])] {
        try read(["XREADGROUP", "GROUP", .text(group), .text(consumer)], streams: streams, count: count, block: block)
    }

    /// `readGroup` for one stream.
    public func readGroup(_ group: String, as consumer: String, from stream: String, after: String = ">",
                          count: Int? = nil, block: Duration? = nil) throws(RedisError) -> [StreamEntry] {
        try readGroup(group, as: consumer, streams: [(stream, after)], count: count, block: block)[0].entries
    }

    /// XREAD [COUNT] [BLOCK] STREAMS … — entries after each given id (no consumer group: every
    /// reader sees every entry, as each node applies the whole registration stream). Waits up to
    /// `block` for new entries; returns the entries per stream, in the order asked, empty on timeout.
    public func read(streams: [(stream: String, after: StreamID)], count: Int? = nil,
                     block: Duration? = nil) throws(RedisError) -> [(stream: String, entries: [StreamEntry])] {
        try read(["XREAD"], streams: streams.map { ($0.stream, $0.after.description) }, count: count, block: block)
    }

    /// XREAD or XREADGROUP (`command`, with its group and consumer): [COUNT] [BLOCK] STREAMS …, and
    /// the reply's entries per stream in the order asked (a BLOCK that timed out: none).
    private func read(_ command: [RedisArgument], streams: [(stream: String, after: String)], count: Int?,
                      block: Duration?) throws(RedisError) -> [(stream: String, entries: [StreamEntry])] {
        let name = Self.commandName(command)
        var arguments = command
        if let count { arguments += ["COUNT", .integer(count)] }
        if let block { arguments += ["BLOCK", .milliseconds(block)] }
        arguments.append("STREAMS")
        arguments += streams.map { .text($0.stream) }
        arguments += streams.map { .text($0.after) }
        let reply = try self.command(arguments, blocking: block)
        var byStream: [String: [StreamEntry]] = [:]
        switch reply {
        case .nil: break
        case let .array(perStream):
            for item in perStream {
                guard case let .array(pair) = item, pair.count == 2, let stream = pair[0].text else {
                    throw .unexpectedReply(command: name, reply: reply.description)
                }
                byStream[stream] = try Self.entries(pair[1], command: name)
            }
        default: throw .unexpectedReply(command: name, reply: reply.description)
        }
        return streams.map { ($0.stream, byStream[$0.stream] ?? []) }
    }

    /// `read` for one stream.
    public func read(from stream: String, after: StreamID, count: Int? = nil, block: Duration? = nil) throws(RedisError) -> [StreamEntry] {
        try read(streams: [(stream, after)], count: count, block: block)[0].entries
    }

    /// XINFO STREAM's figures a reader needs to tell whether entries it never read were trimmed:
    /// nil when the stream does not exist (nothing was ever added, or it was deleted).
    public func head(of stream: String) throws(RedisError) -> StreamHead? {
        let reply: RedisReply
        do throws(RedisError) {
            reply = try command(["XINFO", "STREAM", .text(stream)])
        } catch where error.serverCode == "ERR" && error.description.contains("no such key") {
            return nil
        }
        guard case let .array(items) = reply, items.count % 2 == 0 else { throw .unexpectedReply(command: "XINFO STREAM", reply: reply.description) }
        var length: Int64?
        var entriesAdded: Int64?
        var first: StreamID?
        var last: StreamID?
        for index in stride(from: 0, to: items.count, by: 2) {
            switch (items[index].text, items[index + 1]) {
            case let ("length", .integer(value)): length = value
            case let ("entries-added", .integer(value)): entriesAdded = value
            case let ("first-entry", .array(entry)) where entry.count == 2: first = entry[0].text.flatMap(StreamID.init)
            case let ("last-generated-id", value): last = value.text.flatMap(StreamID.init)
            default: break
            }
        }
        guard let length, let last else { throw .unexpectedReply(command: "XINFO STREAM", reply: reply.description) }
        return StreamHead(length: length, entriesAdded: entriesAdded, firstEntry: first, lastGenerated: last)
    }

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

    /// XDEL → how many of `ids` were in the stream.
    @discardableResult
    public func delete(_ ids: [StreamID], from stream: String) throws(RedisError) -> Int64 {
        guard !ids.isEmpty else { return 0 }
        let reply = try command(["XDEL", .text(stream)] + ids.map { .text($0.description) })
        guard case let .integer(count) = reply else { throw .unexpectedReply(command: "XDEL", reply: reply.description) }
        return count
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

    /// XRANGE `stream` `start` `end` [COUNT]: "-" and "+" are the ends, "(id" excludes id.
    public func range(of stream: String, from start: String = "-", to end: String = "+", count: Int? = nil) throws(RedisError) -> [StreamEntry] {
        var arguments: [RedisArgument] = ["XRANGE", .text(stream), .text(start), .text(end)]
        if let count { arguments += ["COUNT", .integer(count)] }
        return try Self.entries(try command(arguments), command: "XRANGE")
    }

    /// XLEN: the number of entries in the stream (0 when it does not exist).
    public func length(of stream: String) throws(RedisError) -> Int64 {
        let reply = try command(["XLEN", .text(stream)])
        guard case let .integer(count) = reply else { throw .unexpectedReply(command: "XLEN", reply: reply.description) }
        return count
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

    /// Entries from a reply: [[id, [name, value, …]], …]; a nil field list is a trimmed entry.
    static func entries(_ reply: RedisReply, command: String) throws(RedisError) -> [StreamEntry] {
        if reply.isNil { return [] }
        guard case let .array(items) = reply else { throw .unexpectedReply(command: command, reply: reply.description) }
        var entries: [StreamEntry] = []
        entries.reserveCapacity(items.count)
        for item in items {
            guard case let .array(pair) = item, pair.count == 2, let idText = pair[0].text, let id = StreamID(idText) else {
                throw .unexpectedReply(command: command, reply: item.description)
            }
            switch pair[1] {
            case .nil: entries.append(StreamEntry(id: id, fields: [], trimmed: true))
            case let .array(values) where values.count % 2 == 0:
                var fields: [StreamEntry.Field] = []
                fields.reserveCapacity(values.count / 2)
                for index in stride(from: 0, to: values.count, by: 2) {
                    guard let name = values[index].text, case let .bytes(value) = values[index + 1] else {
                        throw .unexpectedReply(command: command, reply: item.description)
                    }
                    fields.append(StreamEntry.Field(name, value))
                }
                entries.append(StreamEntry(id: id, fields: fields))
            default: throw .unexpectedReply(command: command, reply: item.description)
            }
        }
        return entries
    }
}
