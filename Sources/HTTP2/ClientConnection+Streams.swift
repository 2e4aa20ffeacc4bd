#if canImport(Glibc)
import Glibc
#endif
import CNghttp2
import Crypto
import IO

extension ClientConnection {
    /// Submits a request; returns its stream handle, or nil (and calls nothing) when the connection
    /// cannot take it now. `path` is copied at once; `headers` and `body` are retained until the
    /// stream ends. The answer, or the failure, comes back through the delegate with the handle.
    public func submit(method: StaticString, path: UnsafeRawBufferPointer, headers: HeaderList,
                       body: SharedBytes?, deadline: MonotonicInstant) -> Int? {
        submit(method: method, path: path, headers: headers, shared: body, copied: nil, deadline: deadline)
    }

    /// `submit` with a body of this request alone (an FCM message: the phone's token inside a
    /// group's JSON), copied at once into the stream's own reused buffer, like `path`: the caller
    /// may write the next request's body into the same memory right after. No allocation once the
    /// stream's buffer has grown to the size of the bodies sent.
    public func submit(method: StaticString, path: UnsafeRawBufferPointer, headers: HeaderList,
                       copying body: UnsafeRawBufferPointer, deadline: MonotonicInstant) -> Int? {
        submit(method: method, path: path, headers: headers, shared: nil, copied: body, deadline: deadline)
    }

    private func submit(method: StaticString, path: UnsafeRawBufferPointer, headers: HeaderList,
                        shared body: SharedBytes?, copied: UnsafeRawBufferPointer?, deadline: MonotonicInstant) -> Int? {
        loop.assertInLoop("ClientConnection.submit")
        guard case let .open(link) = stage else { return nil }
        let needed = 4 + (authorization.isEmpty ? 0 : 1) + headers.count
        guard needed <= Self.headerScratchCapacity, let slot = streams.reserve() else { return nil }

        let scratch = headerScratch
        var count = 0
        func put(_ name: UnsafePointer<UInt8>, _ nameLength: Int, _ value: UnsafePointer<UInt8>, _ valueLength: Int) {
            scratch[count] = nghttp2_nv(name: UnsafeMutablePointer(mutating: name), value: UnsafeMutablePointer(mutating: value),
                                        namelen: nameLength, valuelen: valueLength, flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            count += 1
        }
        let userData = streams.userData(slot)
        let streamID: Int32 = method.withUTF8Buffer { methodBytes in
            Self.methodName.withUnsafeBufferPointer { mn in
            Self.schemeName.withUnsafeBufferPointer { sn in
            Self.https.withUnsafeBufferPointer { sv in
            Self.authorityName.withUnsafeBufferPointer { an in
            authority.withUnsafeBufferPointer { av in
            Self.pathName.withUnsafeBufferPointer { pn in
            Self.authorizationName.withUnsafeBufferPointer { zn in
            authorization.withUnsafeBufferPointer { zv in
                put(mn.baseAddress!, mn.count, methodBytes.baseAddress!, methodBytes.count)
                put(sn.baseAddress!, sn.count, sv.baseAddress!, sv.count)
                put(an.baseAddress!, an.count, av.baseAddress!, av.count)
                put(pn.baseAddress!, pn.count, path.baseAddress!.assumingMemoryBound(to: UInt8.self), path.count)
                if zv.count > 0 { put(zn.baseAddress!, zn.count, zv.baseAddress!, zv.count) }
                for index in 0..<headers.count { scratch[count] = headers.entries[index]; count += 1 }
                // nghttp2 copies every name and value here (no NO_COPY flag), so nothing above must outlive the call.
                return link.session.submitRequest(headers: scratch, count: count, hasBody: body != nil || copied != nil, streamUserData: userData)
            }}}}}}}}
        }
        guard streamID > 0 else {
            streams.unreserve(slot)
            // Stream ids ran out: finish what is in flight here, new requests go to a new connection.
            if streamID == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE.rawValue { stage = .draining(link) }
            return nil
        }
        let wasQuiet = streams.active == 0
        streams.begin(slot, deadline: deadline, body: body, streamID: streamID)
        // nghttp2 pulls the body when it writes DATA (a later flush, or later still under flow
        // control), so it must be the stream's own by then.
        if let copied { streams.copyBody(slot, from: copied) }
        if wasQuiet {
            // Busy from now: the silence check starts counting here, not at the last byte of an idle gap.
            let now = MonotonicInstant.now()
            silentSince = now
            armLiveness(now: now)
        }
        streamsSubmitted += 1
        if deadline < (deadlineTimer.deadline ?? .distantFuture) { loop.arm(deadlineTimer, at: deadline) }
        return slot
    }

    // MARK: Deadlines and liveness

    /// Streams past their deadline are reset (RST_STREAM CANCEL) and fail; the timer moves to the next deadline.
    func expireDeadlines(now: MonotonicInstant) {
        guard let link = linked else { return }
        for index in 0..<streams.capacity where streams[index].active && streams[index].deadline <= now {
            let sent = streams[index].sent
            if streams[index].streamID > 0 {
                try? link.session.submitReset(streamID: streams[index].streamID, errorCode: UInt32(NGHTTP2_CANCEL.rawValue))
            }
            streams.release(index)
            delegate?.connection(self, didFail: .timedOut(sent: sent), stream: index)
            guard isLinked else { return }
        }
        if let next = streams.earliestDeadline { loop.arm(deadlineTimer, at: next) }
    }

    /// Arms the next liveness check: the silence PING while streams are in flight, the idle PING otherwise.
    func armLiveness(now: MonotonicInstant) {
        if let sent = pingSentAt {
            loop.arm(livenessTimer, at: sent + options.pingTimeout)
            return
        }
        var next = lastReceived + options.pingAfterIdle
        if streams.active > 0, let silence = options.pingAfterSilence { next = min(next, max(silentSince, lastReceived) + silence) }
        loop.arm(livenessTimer, at: max(next, now))
    }

    /// A PING when the peer has been silent too long (busy) or the connection idle; no ACK within
    /// `pingTimeout` closes the connection.
    func checkLiveness(now: MonotonicInstant) {
        guard isLinked else { return }
        if let sent = pingSentAt {
            if sent + options.pingTimeout <= now {
                finishClose(.timeout("no answer to PING within \(options.pingTimeout.milliseconds) ms: the connection went silent"))
                return
            }
        } else {
            let quiet = max(silentSince, lastReceived)
            let silent = streams.active > 0 && options.pingAfterSilence.map { quiet + $0 <= now } == true
            if silent || lastReceived + options.pingAfterIdle <= now, let link = linked {
                do throws(TransportError) { try link.session.submitPing() } catch { finishClose(error); return }
                pingSentAt = now
                pingsSent += 1
                flush(link)
                guard isLinked else { return }
            }
        }
        armLiveness(now: now)
    }

    var linked: Link? {
        switch stage {
        case let .open(link), let .draining(link): return link
        default: return nil
        }
    }

    // MARK: Closing

    /// Fails every open stream and tears the connection down; the delegate hears about each stream
    /// first, then about the connection.
    func finishClose(_ error: TransportError?) {
        if case .closed = stage { return }
        let previous = stage
        stage = .closed
        round &+= 1  // a lookup still under way is ignored when it answers
        pingSentAt = nil
        loop.disarm(connectTimer)
        loop.disarm(deadlineTimer)
        loop.disarm(livenessTimer)
        for index in 0..<streams.capacity where streams[index].active {
            let failure = classifyUnanswered(index: index, errorCode: nil, why: error?.description ?? "connection closed")
            streams.release(index)
            delegate?.connection(self, didFail: failure, stream: index)
        }
        switch previous {
        case let .connecting(race): race.cancelAll(on: loop)
        case let .handshaking(tls): tls.closeNotify()
        case let .open(link), let .draining(link): link.tls.closeNotify()
        case .idle, .resolving, .closed: break
        }
        if case .idle = previous {} else { loop.remove(self) }
        pump.reset()
        // Dropping `previous` here releases the TLS stream, which closes the socket.
        delegate?.connection(self, didClose: error, goAway: goAway)
    }

    /// Refused when provably unprocessed (never sent, REFUSED_STREAM, above GOAWAY's last stream);
    /// unknown otherwise.
    func classifyUnanswered(index: Int, errorCode: UInt32?, why: String) -> StreamFailure {
        let slot = streams[index]
        if !slot.sent { return .refused("not sent before \(why)") }
        if errorCode == UInt32(NGHTTP2_REFUSED_STREAM.rawValue) { return .refused("RST_STREAM REFUSED_STREAM") }
        if let goAway, slot.streamID > goAway.lastStreamID { return .refused("above GOAWAY last-stream-id \(goAway.lastStreamID)") }
        if let errorCode { return .unknown("stream reset with HTTP/2 error \(errorCode)") }
        return .unknown(why)
    }
}

// MARK: Session events (inside receive / produce)

extension ClientConnection: HTTP2SessionDelegate {
    private func index(of streamID: Int32) -> Int? {
        guard let link = linked else { return nil }
        return streams.index(for: link.session.streamUserData(streamID))
    }

    package func sessionBeganHeaders(streamID: Int32) {}

    package func sessionReceivedHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let index = index(of: streamID) else { return }
        if name.count == 7, name.elementsEqual(":status".utf8) {
            var status = 0
            for digit in value { status = status * 10 + Int(digit &- 48) }
            streams[index].status = status
            return
        }
        if let kept = keptHeaderPrefixes, !kept.contains(where: { name.starts(with: $0) }) { return }
        streams[index].responseHeaders.append(contentsOf: name)
        streams[index].responseHeaders.append(0)
        streams[index].responseHeaders.append(contentsOf: value)
        streams[index].responseHeaders.append(0)
    }

    package func sessionReceivedData(streamID: Int32, data: UnsafeBufferPointer<UInt8>) {
        guard let index = index(of: streamID) else { return }
        if streams[index].responseBody.count + data.count <= 64 * 1024 { streams[index].responseBody.append(contentsOf: data) }
    }

    package func sessionReceivedEndOfStream(streamID: Int32) {}

    package func sessionSentHeaders(streamID: Int32) {
        guard let index = index(of: streamID) else { return }
        streams[index].sent = true
    }

    package func sessionCouldNotSendHeaders(streamID: Int32, userData: UnsafeMutableRawPointer?) {
        guard let index = streams.index(for: userData) ?? index(of: streamID) else { return }
        streams.release(index)
        delegate?.connection(self, didFail: .refused("not sent: the connection is going away"), stream: index)
    }

    package func sessionReceivedPingAcknowledgement() {
        pingSentAt = nil
        pingsAcknowledged += 1
        armLiveness(now: MonotonicInstant.now())
    }

    package func sessionReceivedGoAway(lastStreamID: Int32, errorCode: UInt32, debugData: UnsafeBufferPointer<UInt8>) {
        goAway = GoAwayInfo(lastStreamID: lastStreamID, errorCode: errorCode, debugData: String(decoding: debugData, as: UTF8.self))
        if case let .open(link) = stage { stage = .draining(link) }
    }

    package func sessionClosedStream(streamID: Int32, errorCode: UInt32) {
        guard let index = index(of: streamID) else { return }
        let status = streams[index].status
        guard status > 0 else {
            let failure = classifyUnanswered(index: index, errorCode: errorCode, why: "stream closed")
            streams.release(index)
            delegate?.connection(self, didFail: failure, stream: index)
            return
        }
        responsesReceived += 1
        if (200..<300).contains(status) { successfulResponses += 1 }
        // Move the buffers out of the table for the call: a delegate that submits from here mutates
        // `streams`, which must not be under an access then (exclusivity). Moving keeps their capacity.
        var headerBytes: [UInt8] = []
        var body: [UInt8] = []
        swap(&headerBytes, &streams[index].responseHeaders)
        swap(&body, &streams[index].responseBody)
        headerBytes.withUnsafeBufferPointer { headerBuffer in
            body.withUnsafeBufferPointer { bodyBuffer in
                delegate?.connection(self, didReceive: ResponseView(status: status, headerBytes: headerBuffer, body: bodyBuffer), stream: index)
            }
        }
        swap(&headerBytes, &streams[index].responseHeaders)
        swap(&body, &streams[index].responseBody)
        streams.release(index)
    }

    package func sessionReadBody(streamID: Int32, source: UnsafeMutableRawPointer?, into buffer: UnsafeMutablePointer<UInt8>,
                                length: Int, endOfData: inout Bool) -> Int {
        guard let index = streams.index(for: source) else {
            endOfData = true
            return 0
        }
        let (count, end) = streams.readBody(index, into: buffer, length: length)
        if end { endOfData = true }
        return count
    }
}
