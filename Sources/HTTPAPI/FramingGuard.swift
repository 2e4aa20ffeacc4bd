#if canImport(Glibc)
import Glibc
#endif
import CLibEvent
import IO

/// Puts a `RequestFraming` between each connection's socket and evhttp. Loop thread only.
///
/// libevent 2.1 has no hook into evhttp's parser, but it lets the server make each connection's
/// bufferevent (`evhttp_set_bevcb`). Ours is a plain socket bufferevent (a filtering one would
/// report a response written once it reached the socket's buffer, and evhttp shuts the socket down
/// right then for `Connection: close`, losing the end of it) with a callback on its input buffer:
/// libevent calls it right after bytes are read from the socket, before evhttp's read callback, so
/// the new bytes can be taken out and put back as `RequestFraming` releases them.
final class FramingGuard {
    /// One connection's framing, keyed by its bufferevent's input buffer.
    final class Connection {
        var framing: RequestFraming
        let bufferevent: OpaquePointer
        /// True while this guard rewrites the buffer (its own changes call the callback again).
        var rewriting = false
        var watchingClose = false
        /// When the first byte of the request being read came (nil between requests).
        var requestStarted: MonotonicInstant?

        init(bufferevent: OpaquePointer, maximumHeadBytes: Int) {
            self.bufferevent = bufferevent
            framing = RequestFraming(maximumHeadBytes: maximumHeadBytes)
        }
    }

    private var connections: [OpaquePointer: Connection] = [:]
    private let maximumHeadBytes: Int

    init(maximumHeadBytes: Int) {
        self.maximumHeadBytes = maximumHeadBytes
    }

    /// Installs the guard on `http`; `self` must outlive it.
    func install(on http: OpaquePointer) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        evhttp_set_bevcb(http, { base, context in
            guard let base, let context else { return nil }
            return Unmanaged<FramingGuard>.fromOpaque(context).takeUnretainedValue().makeBufferevent(base)
        }, context)
    }

    /// The verdict on the request evhttp handed over: nil to serve it, else the refusal to answer.
    func verdict(for request: OpaquePointer) -> FramingRefusal? {
        guard let connection = evhttp_request_get_connection(request),
              let bufferevent = evhttp_connection_get_bufferevent(connection) else { return nil }
        guard let input = try? LibEvent.require("bufferevent_get_input", bufferevent_get_input(bufferevent)) else { return nil }
        return connections[input]?.framing.takeVerdict()
    }

    func removeAll() { connections.removeAll() }

    /// A socket bufferevent that closes its socket when evhttp frees it, with the guard on its input.
    /// nil (evhttp then makes its own, unguarded) only when libevent is out of memory.
    private func makeBufferevent(_ base: OpaquePointer) -> OpaquePointer? {
        guard let bufferevent = try? LibEvent.require("bufferevent_socket_new", bufferevent_socket_new(base, -1, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue))),
              let input = try? LibEvent.require("bufferevent_get_input", bufferevent_get_input(bufferevent)) else { return nil }
        // A connection freed without our close callback (it never sent a byte) leaves its entry;
        // the allocator handing out its address again proves it gone, so the entry is replaced.
        let connection = Connection(bufferevent: bufferevent, maximumHeadBytes: maximumHeadBytes)
        connections[input] = connection
        let context = Unmanaged.passUnretained(self).toOpaque()
        do throws(LibEvent.Failure) {
            _ = try LibEvent.require("evbuffer_add_cb", evbuffer_add_cb(input, { buffer, info, context in
                guard let buffer, let info, let context else { return }
                Unmanaged<FramingGuard>.fromOpaque(context).takeUnretainedValue().changed(buffer, info.pointee)
            }, context))
        } catch {
            connections[input] = nil
            bufferevent_free(bufferevent)
            return nil
        }
        return bufferevent
    }

    /// The input buffer changed. Bytes added by the socket read (at the end) go through the
    /// connection's framing; what it releases is put back.
    private func changed(_ buffer: OpaquePointer, _ info: evbuffer_cb_info) {
        guard info.n_added > 0, let connection = connections[buffer], !connection.rewriting else { return }
        connection.rewriting = true
        defer { connection.rewriting = false }
        watchClose(connection)
        do throws(LibEvent.Failure) {
            let total = evbuffer_get_length(buffer)
            let added = min(info.n_added, total)
            // No call removes bytes from a buffer's end: move the earlier bytes (released before,
            // not yet read by evhttp) aside, take the new ones, put the earlier ones back.
            let earlier = total - added
            var aside: OpaquePointer?
            defer { if let aside { evbuffer_free(aside) } }
            if earlier > 0 {
                let moved = try LibEvent.require("evbuffer_new", evbuffer_new())
                aside = moved
                try LibEvent.count("evbuffer_remove_buffer", Int(evbuffer_remove_buffer(buffer, moved, earlier)), expected: earlier)
            }
            var bytes = [UInt8](repeating: 0, count: added)
            let taken = bytes.withUnsafeMutableBytes { Int(evbuffer_remove(buffer, $0.baseAddress, added)) }
            try LibEvent.count("evbuffer_remove", taken, expected: added)
            if let aside { try LibEvent.check("evbuffer_add_buffer", evbuffer_add_buffer(buffer, aside)) }
            let released = connection.framing.feed(bytes)
            connection.requestStarted = connection.framing.isBetweenRequests ? nil : connection.requestStarted ?? MonotonicInstant.now()
            if !released.isEmpty {
                try LibEvent.check("evbuffer_add", released.withUnsafeBytes { evbuffer_add(buffer, $0.baseAddress, $0.count) })
            }
        } catch {
            // Out of memory mid-rewrite: what evhttp would read is no longer the client's stream.
            // Nothing more is released; evhttp's timeout closes the connection.
            connection.framing.abandon()
            _ = try? LibEvent.check("evbuffer_drain", evbuffer_drain(buffer, evbuffer_get_length(buffer)))
        }
    }

    /// Answers 408 and closes every connection whose request has been arriving for longer than
    /// `deadline` (run every second by the server's loop). Written straight to the socket (evhttp
    /// is still reading the request, and writes nothing until it has it), then the connection is
    /// freed; its input is drained first, so the close is a FIN the client reads after the 408,
    /// not a reset that could discard it.
    func expireSlowRequests(deadline: Duration) {
        let now = MonotonicInstant.now()
        let late = connections.values.filter { $0.requestStarted.map { now - $0 > deadline } ?? false }
        for connection in late {
            var argument: UnsafeMutableRawPointer?
            bufferevent_getcb(connection.bufferevent, nil, nil, nil, &argument)
            guard let argument else { continue }
            let seconds = deadline.components.seconds
            let body = #"{"error":{"code":"request_timeout","message":"the request did not arrive whole within \#(seconds) s of its first byte; send each request at once"}}"#
            let response = Array("HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)".utf8)
            let fd = bufferevent_getfd(connection.bufferevent)
            if fd >= 0 {
                var scratch = [UInt8](repeating: 0, count: 4096)
                while scratch.withUnsafeMutableBytes({ recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) > 0 {}
                _ = response.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            }
            connection.requestStarted = nil
            connection.framing.abandon()
            evhttp_connection_free(OpaquePointer(argument))
        }
    }

    /// Forgets the connection when evhttp frees it. evhttp sets the bufferevent's callbacks with
    /// the connection as their argument once `makeBufferevent` returned; the first bytes come later.
    private func watchClose(_ connection: Connection) {
        guard !connection.watchingClose else { return }
        connection.watchingClose = true
        var argument: UnsafeMutableRawPointer?
        bufferevent_getcb(connection.bufferevent, nil, nil, nil, &argument)
        guard let argument else { return }
        let evcon = OpaquePointer(argument)
        evhttp_connection_set_closecb(evcon, { evcon, context in
            guard let evcon, let context, let bufferevent = evhttp_connection_get_bufferevent(evcon),
                  let input = try? LibEvent.require("bufferevent_get_input", bufferevent_get_input(bufferevent)) else { return }
            Unmanaged<FramingGuard>.fromOpaque(context).takeUnretainedValue().connections[input] = nil
        }, Unmanaged.passUnretained(self).toOpaque())
    }
}
