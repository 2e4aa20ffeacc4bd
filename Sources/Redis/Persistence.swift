/// Whether what a Redis (or Valkey) server holds survives its restart, as `INFO persistence` says.
/// Read through INFO, not CONFIG GET: managed Redis and Valkey services refuse CONFIG but answer INFO.
///
/// Only the append-only file counts as durable for the cluster: RDB snapshots are minutes apart
/// (`save 3600 1 300 100 60 10000` by default), so a restart loses every event accepted since the
/// last one — exactly the events still being sent.
public struct RedisPersistence: Sendable, Equatable {
    /// `aof_enabled:1`.
    public var appendOnly: Bool
    /// `loading:1`: the server is still reading its data back after a start.
    public var loading: Bool

    public init(appendOnly: Bool, loading: Bool = false) {
        self.appendOnly = appendOnly
        self.loading = loading
    }

    /// Parses the text of `INFO persistence` ("# Persistence\r\nloading:0\r\n…aof_enabled:0\r\n…"); lines
    /// end in CR LF, one `Character` in Swift, hence `isNewline`.
    /// Nil when it has no `aof_enabled` line (not a Redis INFO answer).
    public init?(info text: String) {
        var fields: [Substring: Substring] = [:]
        for line in text.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon]] = line[line.index(after: colon)...]
        }
        guard let aof = fields["aof_enabled"] else { return nil }
        appendOnly = aof == "1"
        loading = fields["loading"] == "1"
    }
}

extension RedisConnection {
    /// `INFO persistence`, parsed.
    public func persistence() throws(RedisError) -> RedisPersistence {
        let reply = try command(["INFO", "persistence"])
        guard let text = reply.text, let persistence = RedisPersistence(info: text) else {
            throw .unexpectedReply(command: "INFO persistence", reply: reply.description)
        }
        return persistence
    }
}
