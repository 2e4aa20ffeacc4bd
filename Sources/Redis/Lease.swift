/// A lease held in Redis: `holder` has it until it expires, with `token`, the fencing token this
/// acquisition got. Tokens only grow (one counter per lease name, never reset), so a store or peer
/// that remembers the highest token it has seen can refuse writes from an older holder that still
/// believes it holds the lease (a paused process, a partition).
public struct Lease: Sendable, Equatable, CustomStringConvertible {
    public let name: String
    public let holder: String
    public let token: Int64

    public init(name: String, holder: String, token: Int64) {
        self.name = name
        self.holder = holder
        self.token = token
    }

    /// `sokuho:lease:<name>`: the key whose value is "<token> <holder>", with the lease's expiry.
    public var key: String { Lease.key(name) }
    public static func key(_ name: String) -> String { "sokuho:lease:\(name)" }
    /// `sokuho:lease:<name>:fence`: the counter INCR'd on every acquisition; it never expires.
    public static func fenceKey(_ name: String) -> String { "sokuho:lease:\(name):fence" }

    var value: String { "\(token) \(holder)" }

    public var description: String { "lease \(name) held by \(holder), token \(token)" }
}

/// Leases as atomic Lua scripts (EVAL): each checks and changes the key in one step, so two nodes
/// never both see the lease free, and only the holder with the current token extends or releases it.
extension RedisConnection {
    /// Acquires lease `name` for `holder` for `duration` (SET NX PX, with the fencing token from INCR);
    /// nil when someone holds it — the holder itself included: a holder extends instead.
    public func acquireLease(_ name: String, holder: String, for duration: Duration) throws(RedisError) -> Lease? {
        let script = """
            if redis.call('EXISTS', KEYS[1]) == 1 then return false end
            local token = redis.call('INCR', KEYS[2])
            redis.call('SET', KEYS[1], token .. ' ' .. ARGV[1], 'NX', 'PX', ARGV[2])
            return token
            """
        let reply = try eval(script, keys: [Lease.key(name), Lease.fenceKey(name)], arguments: [.text(holder), .milliseconds(duration)])
        switch reply {
        case .nil: return nil
        case let .integer(token): return Lease(name: name, holder: holder, token: token)
        default: throw .unexpectedReply(command: "EVAL (acquire lease \(name))", reply: reply.description)
        }
    }

    /// Extends `lease` to expire `duration` from now — only if it is still this holder's with this
    /// token. False: it expired and (maybe) someone else holds it now; stop acting on it.
    public func extendLease(_ lease: Lease, for duration: Duration) throws(RedisError) -> Bool {
        let script = """
            if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
            return 0
            """
        return try leaseScript(script, lease, arguments: [.text(lease.value), .milliseconds(duration)], what: "extend")
    }

    /// Releases `lease` (compare-and-delete) so another node can take it at once. False: it was no
    /// longer this holder's.
    @discardableResult
    public func releaseLease(_ lease: Lease) throws(RedisError) -> Bool {
        let script = """
            if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
            return 0
            """
        return try leaseScript(script, lease, arguments: [.text(lease.value)], what: "release")
    }

    /// Who holds lease `name` now, nil when nobody does.
    public func currentLease(_ name: String) throws(RedisError) -> Lease? {
        guard let value = try get(Lease.key(name)) else { return nil }
        let text = String(decoding: value, as: UTF8.self)
        guard let space = text.firstIndex(of: " "), let token = Int64(text[..<space]) else {
            throw .unexpectedReply(command: "GET \(Lease.key(name))", reply: text)
        }
        return Lease(name: name, holder: String(text[text.index(after: space)...]), token: token)
    }

    private func leaseScript(_ script: String, _ lease: Lease, arguments: [RedisArgument], what: String) throws(RedisError) -> Bool {
        let reply = try eval(script, keys: [lease.key], arguments: arguments)
        guard case let .integer(changed) = reply else {
            throw .unexpectedReply(command: "EVAL (\(what) lease \(lease.name))", reply: reply.description)
        }
        return changed == 1
    }
}

/// Plain keys: what leases are made of, and what the later parts keep beside the streams.
extension RedisConnection {
    /// SET `key` `value` [NX] [PX ms] → false when NX found the key already there.
    @discardableResult
    public func set(_ key: String, _ value: [UInt8], onlyIfAbsent: Bool = false, expiresAfter: Duration? = nil) throws(RedisError) -> Bool {
        var arguments: [RedisArgument] = ["SET", .text(key), .data(value)]
        if onlyIfAbsent { arguments.append("NX") }
        if let expiresAfter { arguments += ["PX", .milliseconds(expiresAfter)] }
        let reply = try command(arguments)
        switch reply {
        case .status("OK"): return true
        case .nil: return false
        default: throw .unexpectedReply(command: "SET", reply: reply.description)
        }
    }

    /// GET `key` → its value, nil when absent.
    public func get(_ key: String) throws(RedisError) -> [UInt8]? {
        let reply = try command(["GET", .text(key)])
        switch reply {
        case let .bytes(value): return value
        case .nil: return nil
        default: throw .unexpectedReply(command: "GET", reply: reply.description)
        }
    }

    /// INCR `key` → the new value.
    public func increment(_ key: String) throws(RedisError) -> Int64 {
        let reply = try command(["INCR", .text(key)])
        guard case let .integer(value) = reply else { throw .unexpectedReply(command: "INCR", reply: reply.description) }
        return value
    }

    /// PEXPIRE `key` `duration` → whether the key exists.
    @discardableResult
    public func expire(_ key: String, after duration: Duration) throws(RedisError) -> Bool {
        let reply = try command(["PEXPIRE", .text(key), .milliseconds(duration)])
        guard case let .integer(value) = reply else { throw .unexpectedReply(command: "PEXPIRE", reply: reply.description) }
        return value == 1
    }

    /// DEL `keys` → how many existed.
    @discardableResult
    public func delete(_ keys: [String]) throws(RedisError) -> Int64 {
        let reply = try command(["DEL"] + keys.map { .text($0) })
        guard case let .integer(value) = reply else { throw .unexpectedReply(command: "DEL", reply: reply.description) }
        return value
    }

    /// EVAL `script` with `keys` and `arguments`: the script's reply (Lua false is `.nil`).
    public func eval(_ script: String, keys: [String], arguments: [RedisArgument]) throws(RedisError) -> RedisReply {
        try command(["EVAL", .text(script), .integer(keys.count)] + keys.map { .text($0) } + arguments)
    }
}
