import CNghttp2
import IO

/// The one place nghttp2's int return codes are checked (grep rule: in Sources/HTTP2, an
/// int-returning `nghttp2_` call is wrapped in `Nghttp2.check` or returns a stream id that the
/// caller tests; the void ones are `nghttp2_*_del`/`_callbacks_set_*`). `Tests/SourceRuleTests` enforces it.
enum Nghttp2 {
    /// Throws a protocol error naming the call when `rc` is one of nghttp2's (negative) error codes.
    @inline(__always)
    static func check(_ rc: Int32, _ what: StaticString) throws(TransportError) {
        if rc < 0 { throw .protocolError("\(what): \(String(cString: nghttp2_strerror(rc)))") }
    }

    /// The same for calls that return a count (`mem_send`, `mem_recv`).
    @inline(__always)
    static func check(_ rc: Int, _ what: StaticString) throws(TransportError) -> Int {
        if rc < 0 { throw .protocolError("\(what): \(String(cString: nghttp2_strerror(Int32(truncatingIfNeeded: rc))))") }
        return rc
    }
}
