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

/// The stream commands the cluster uses, as typed calls (a consumer group's pending entries:
/// `StreamPending.swift`). Stream and group names are plain keys.
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

    /// XDEL → how many of `ids` were in the stream.
    @discardableResult
    public func delete(_ ids: [StreamID], from stream: String) throws(RedisError) -> Int64 {
        guard !ids.isEmpty else { return 0 }
        let reply = try command(["XDEL", .text(stream)] + ids.map { .text($0.description) })
        guard case let .integer(count) = reply else { throw .unexpectedReply(command: "XDEL", reply: reply.description) }
        return count
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
}
