#if canImport(Glibc)
import Glibc
#endif
import CLibEvent
import IO

/// Owns every libevent object of one server: the event_base, the evhttp with its listeners, and the
/// wake-up event. After init it is confined to the server thread (the loop); libevent is used without
/// its own locking, so nothing here may be touched from elsewhere while the loop runs — other threads
/// go through `mailbox`.
final class EventHTTPCore: @unchecked Sendable {
    // @unchecked: built on the creating thread, then handed to the loop thread by pthread_create
    // (which orders the two) and touched only there; `mailbox` is the thread-safe part.
    private var base: OpaquePointer?
    private var http: OpaquePointer?
    private var wakeEvent: OpaquePointer?
    /// Every second: requests that have been arriving longer than `requestDeadline` get their 408.
    private var deadlineEvent: OpaquePointer?
    private let requestDeadline: Duration
    let mailbox = DeferredMailbox()
    /// Out of descriptors: 503 instead of a spinning accept (`AcceptGuard`).
    let acceptGuard = AcceptGuard()
    private(set) var ports: [Int] = []
    private let answer: @Sendable (HTTPRequest) -> HTTPAnswer
    /// Requests waiting for a deferred answer, by responder id.
    private var deferred: [UInt64: OpaquePointer] = [:]
    private var nextDeferred: UInt64 = 1
    /// HTTP/1.1 framing checked before evhttp parses (`RequestFraming`).
    private let framing: FramingGuard

    init(listen addresses: [(host: String, port: Int)], limits: HTTPLimits,
         answer: @escaping @Sendable (HTTPRequest) -> HTTPAnswer) throws(HTTPServerError) {
        guard !addresses.isEmpty else { throw .noAddress }
        self.answer = answer
        requestDeadline = limits.requestDeadline
        framing = FramingGuard(maximumHeadBytes: limits.maximumHeaderBytes)
        do throws(LibEvent.Failure) {
            base = try LibEvent.require("event_base_new", event_base_new())
            http = try LibEvent.require("evhttp_new", evhttp_new(base))
        } catch {
            close()
            throw .libevent(call: error.call)
        }
        evhttp_set_max_body_size(http, limits.maximumBodyBytes)
        evhttp_set_max_headers_size(http, limits.maximumHeaderBytes)
        let (seconds, attoseconds) = limits.timeout.components
        var timeout = timeval(tv_sec: Int(seconds), tv_usec: Int(attoseconds / 1_000_000_000_000))
        evhttp_set_timeout_tv(http, &timeout)
        // Every method reaches the handler, TRACE, CONNECT and ones evhttp does not know included:
        // the API answers them (405 or 501, in JSON) rather than evhttp's HTML 501.
        evhttp_set_allowed_methods(http, UInt16.max)
        framing.install(on: http!)
        // One callback for every path: routing belongs to the API layer, and evhttp's own 404 page
        // (HTML) is never used.
        let context = Unmanaged.passUnretained(self).toOpaque()
        evhttp_set_gencb(http, { request, context in
            guard let request, let context else { return }
            Unmanaged<EventHTTPCore>.fromOpaque(context).takeUnretainedValue().handle(request)
        }, context)

        var bound: [Int] = []
        for address in addresses {
            do throws(HTTPServerError) {
                bound.append(try accept(on: address))
            } catch {
                close()
                throw error
            }
        }
        ports = bound
        do throws(LibEvent.Failure) {
            wakeEvent = try LibEvent.require("event_new", event_new(base, mailbox.fileDescriptor, Int16(EV_READ | EV_PERSIST), { _, _, context in
                guard let context else { return }
                Unmanaged<EventHTTPCore>.fromOpaque(context).takeUnretainedValue().wokenUp()
            }, context))
            try LibEvent.check("event_add", event_add(wakeEvent, nil))
            deadlineEvent = try LibEvent.require("event_new", event_new(base, -1, Int16(EV_PERSIST), { _, _, context in
                guard let context else { return }
                let core = Unmanaged<EventHTTPCore>.fromOpaque(context).takeUnretainedValue()
                core.framing.expireSlowRequests(deadline: core.requestDeadline)
            }, context))
            var second = timeval(tv_sec: 1, tv_usec: 0)
            try LibEvent.check("event_add", event_add(deadlineEvent, &second))
        } catch {
            close()
            throw .libevent(call: error.call)
        }
    }

    deinit { close() }

    /// Binds one listener (our own socket code, so a failure says which address and why) and hands
    /// the socket to evhttp, which closes it when it is freed. Returns the bound port.
    private func accept(on address: (host: String, port: Int)) throws(HTTPServerError) -> Int {
        let listener: Socket.Listener
        do throws(TransportError) {
            listener = try Socket.listen(host: address.host, port: address.port, backlog: 511)
        } catch {
            switch error {
            case let .resolve(host, message): throw .address(host: host, message: message)
            case let .bind(bound, code): throw .bind(address: bound, errno: code)
            case let .socket(_, code): throw .bind(address: addressText(host: address.host, port: address.port), errno: code)
            default: throw .bind(address: addressText(host: address.host, port: address.port), errno: EINVAL)
            }
        }
        let port = listener.address.port
        let fd = listener.releaseDescriptor()
        let bound: OpaquePointer
        do throws(LibEvent.Failure) {
            bound = try LibEvent.require("evhttp_accept_socket_with_handle", evhttp_accept_socket_with_handle(http, fd))
        } catch {
            Glibc.close(fd)
            throw .libevent(call: error.call)
        }
        do throws(LibEvent.Failure) {
            let listener = try LibEvent.require("evhttp_bound_socket_get_listener", evhttp_bound_socket_get_listener(bound))
            try acceptGuard.watch(listener, base: base!, context: Unmanaged.passUnretained(self).toOpaque())
        } catch {
            throw .libevent(call: error.call)
        }
        return port
    }

    /// The loop; returns after `mailbox.requestStop()`, with every connection and listener closed.
    func run() {
        // 1 would mean no events were registered, impossible with the persistent wake-up event.
        LibEvent.mustSucceed("event_base_dispatch", event_base_dispatch(base))
        close()
    }

    /// Frees everything, once: on the loop thread after the loop ended, or on the creating thread for
    /// a server that never ran. Deferred requests still waiting are freed with their connections by
    /// evhttp_free; their responders find the mailbox closed.
    func close() {
        mailbox.close()
        deferred.removeAll()
        framing.removeAll()
        acceptGuard.close()
        if let wakeEvent { event_free(wakeEvent) }
        if let deadlineEvent { event_free(deadlineEvent) }
        deadlineEvent = nil
        if let http { evhttp_free(http) }
        if let base { event_base_free(base) }
        (wakeEvent, http, base) = (nil, nil, nil)
    }

    /// The eventfd fired: deferred responses to send, or the request to stop.
    private func wokenUp() {
        let (replies, stopping) = mailbox.take()
        for (id, response) in replies {
            // Absent: already answered (cannot happen, responders answer once) or stopped.
            if let request = deferred.removeValue(forKey: id) { send(response, to: request) }
        }
        if stopping { LibEvent.mustSucceed("event_base_loopbreak", event_base_loopbreak(base)) }
    }

    /// evhttp's callback for every complete request.
    private func handle(_ request: OpaquePointer) {
        let parsed: HTTPRequest
        do throws(LibEvent.Failure) {
            parsed = try EventHTTPRequestReader.read(request)
        } catch {
            send(.error(status: 500, code: "internal", message: "cannot read the request: \(error)"), to: request)
            return
        }
        // A request whose framing was refused reached evhttp as a stand-in (`RequestFraming`): it
        // is answered with the refusal, and the connection closed (the rest of the stream was not
        // read as the client meant it).
        if let refusal = framing.verdict(for: request) {
            var response = HTTPResponse.error(status: refusal.status, code: refusal.code, message: refusal.message)
            response.headers.append(("Connection", "close"))
            send(response, to: request)
            return
        }
        switch answer(parsed) {
        case let .response(response):
            send(response, to: request)
        case let .deferred(start):
            let id = nextDeferred
            nextDeferred += 1
            // evhttp keeps a request the user has not answered alive even if its client goes away
            // (it detaches it from the connection; evhttp_send_reply then just frees it).
            deferred[id] = request
            start(HTTPResponder(id: id, mailbox: mailbox))
        }
    }

    /// Sends `response`; one that libevent refuses (a header value with CR or LF, a status outside
    /// 100…599) becomes a JSON 500 instead, so the client always gets an answer.
    private func send(_ response: HTTPResponse, to request: OpaquePointer) {
        do throws(LibEvent.Failure) {
            try EventHTTPResponseWriter.write(response, to: request)
        } catch {
            let fallback = HTTPResponse.error(status: 500, code: "internal", message: "the response could not be sent: \(error)")
            do throws(LibEvent.Failure) {
                try EventHTTPResponseWriter.reset(request)
                try EventHTTPResponseWriter.write(fallback, to: request)
            } catch {
                evhttp_send_error(request, 500, nil)
            }
        }
    }
}
