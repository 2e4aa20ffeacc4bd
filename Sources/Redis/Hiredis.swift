#if canImport(Glibc)
import Glibc
#endif
import CHiredis

/// The checked wrappers every hiredis call of this module goes through (Tests/SourceRuleTests reads
/// the sources and fails on a call whose result is dropped). hiredis 0.14 reports failures three
/// ways, one wrapper each: a status (`REDIS_OK`/`REDIS_ERR`), a context that may come back NULL or
/// with `err` set, and a reply that is NULL when the connection failed. The context's `errstr` is
/// the message; after any of these failures the context is unusable until a reconnect.
enum Hiredis {
    /// A status call (`redisSetTimeout`, `redisEnableKeepAlive`): `REDIS_OK` or a lost connection.
    static func check(_ call: StaticString, _ rc: Int32, _ context: UnsafeMutablePointer<redisContext>) throws(RedisError) {
        guard rc == REDIS_OK else { throw .connectionLost(command: "\(call)", message: message(context)) }
    }

    /// A connect: the context, or `.connectFailed` with hiredis's message (the context, if any, freed).
    static func context(_ endpoint: String, _ context: UnsafeMutablePointer<redisContext>?) throws(RedisError) -> UnsafeMutablePointer<redisContext> {
        guard let context else { throw .connectFailed(endpoint: endpoint, message: "cannot allocate a hiredis context") }
        guard context.pointee.err == 0 else {
            let text = message(context)
            redisFree(context)
            throw .connectFailed(endpoint: endpoint, message: text)
        }
        return context
    }

    /// A command's reply, converted to a value and freed (`freeReplyObject`, always); NULL — the
    /// connection failed or timed out — is `.connectionLost`. An error reply is returned as
    /// `.error`: the caller decides whether it is expected (BUSYGROUP) or throws it.
    static func reply(_ command: String, _ raw: UnsafeMutableRawPointer?, _ context: UnsafeMutablePointer<redisContext>) throws(RedisError) -> RedisReply {
        guard let raw else { throw .connectionLost(command: command, message: message(context)) }
        defer { freeReplyObject(raw) }
        return RedisReply(raw.assumingMemoryBound(to: redisReply.self))
    }

    /// The context's `errstr`, or a description of `err` when the string is empty.
    static func message(_ context: UnsafeMutablePointer<redisContext>) -> String {
        let text = withUnsafeBytes(of: context.pointee.errstr) { bytes in
            String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
        }
        if !text.isEmpty { return text }
        switch context.pointee.err {
        case REDIS_ERR_EOF: return "server closed the connection"
        case REDIS_ERR_IO: return "I/O error"
        case REDIS_ERR_PROTOCOL: return "protocol error"
        case REDIS_ERR_OOM: return "out of memory"
        default: return "hiredis error \(context.pointee.err)"
        }
    }

    /// The hiredis the module was compiled against ("0.14.1"; 0.14 has no run-time version call).
    static var version: String { "\(HIREDIS_MAJOR).\(HIREDIS_MINOR).\(HIREDIS_PATCH)" }
}

/// The linked hiredis, for `sokuho version` once the daemon links the cluster.
public enum HiredisLibrary {
    public static var version: String { Hiredis.version }
}

extension RedisReply {
    /// The value of one hiredis reply, its elements converted recursively. The pointer stays
    /// valid only until `freeReplyObject` (the caller's), so nothing here keeps it.
    init(_ reply: UnsafePointer<redisReply>) {
        let r = reply.pointee
        func bytes() -> [UInt8] {
            guard let str = r.str, r.len > 0 else { return [] }
            return str.withMemoryRebound(to: UInt8.self, capacity: r.len) { Array(UnsafeBufferPointer(start: $0, count: r.len)) }
        }
        switch r.type {
        case REDIS_REPLY_STATUS: self = .status(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_ERROR: self = .error(String(decoding: bytes(), as: UTF8.self))
        case REDIS_REPLY_INTEGER: self = .integer(Int64(r.integer))
        case REDIS_REPLY_STRING: self = .bytes(bytes())
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(r.elements)
            for index in 0..<r.elements {
                if let element = r.element[index] { elements.append(RedisReply(element)) } else { elements.append(.nil) }
            }
            self = .array(elements)
        default: self = .nil // REDIS_REPLY_NIL (a nil bulk string or a nil array)
        }
    }
}
