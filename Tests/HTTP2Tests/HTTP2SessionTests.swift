import CNghttp2
import HTTP2
import IO
import Testing

/// Records what one side of a session reports, and answers body reads from fixed bytes.
final class SessionRecorder: HTTP2SessionDelegate {
    var headers: [Int32: [(String, String)]] = [:]
    var data: [Int32: [UInt8]] = [:]
    var ended: [Int32] = []
    var closed: [Int32: UInt32] = [:]
    var sentHeaders: [Int32] = []
    var notSent: [Int32] = []
    var goAway: (lastStreamID: Int32, errorCode: UInt32, debugData: String)?
    var pingAcks = 0
    /// Body served for every stream this side sends data on.
    var body: [UInt8] = []
    var bodyOffsets: [Int32: Int] = [:]

    func sessionBeganHeaders(streamID: Int32) { headers[streamID] = [] }
    func sessionReceivedHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        headers[streamID, default: []].append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }
    func sessionReceivedData(streamID: Int32, data: UnsafeBufferPointer<UInt8>) { self.data[streamID, default: []].append(contentsOf: data) }
    func sessionReceivedEndOfStream(streamID: Int32) { ended.append(streamID) }
    func sessionSentHeaders(streamID: Int32) { sentHeaders.append(streamID) }
    func sessionCouldNotSendHeaders(streamID: Int32, userData: UnsafeMutableRawPointer?) { notSent.append(streamID) }
    func sessionClosedStream(streamID: Int32, errorCode: UInt32) { closed[streamID] = errorCode }
    func sessionReceivedGoAway(lastStreamID: Int32, errorCode: UInt32, debugData: UnsafeBufferPointer<UInt8>) {
        goAway = (lastStreamID, errorCode, String(decoding: debugData, as: UTF8.self))
    }
    func sessionReceivedPingAcknowledgement() { pingAcks += 1 }
    func sessionReadBody(streamID: Int32, source: UnsafeMutableRawPointer?, into buffer: UnsafeMutablePointer<UInt8>,
                         length: Int, endOfData: inout Bool) -> Int {
        let offset = bodyOffsets[streamID, default: 0]
        let count = min(length, body.count - offset)
        body.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + offset, count: count) }
        bodyOffsets[streamID] = offset + count
        if offset + count == body.count { endOfData = true }
        return count
    }
}

/// A client and a server session wired to each other in memory: frames go in as bytes and come out
/// as events, with no socket and no TLS — the HTTP/2 layer alone.
final class SessionPair {
    let clientEvents = SessionRecorder()
    let serverEvents = SessionRecorder()
    let client: HTTP2Session
    let server: HTTP2Session
    let requestHeaders = HeaderList([(":method", "POST"), (":scheme", "https"), (":authority", "test"), (":path", "/3/device/ab")])

    init(serverStreams: UInt32 = 100) throws {
        client = try HTTP2Session(role: .client, delegate: clientEvents, maximumConcurrentStreams: 100)
        server = try HTTP2Session(role: .server, delegate: serverEvents, maximumConcurrentStreams: serverStreams)
    }

    /// Moves bytes both ways until neither side has anything to send; returns the bytes moved.
    @discardableResult
    func exchange(rounds: Int = 20) throws -> Int {
        var moved = 0
        for _ in 0..<rounds {
            let fromClient = try move(from: client, to: server)
            let fromServer = try move(from: server, to: client)
            moved += fromClient + fromServer
            if fromClient == 0 && fromServer == 0 { break }
        }
        return moved
    }

    private func move(from sender: HTTP2Session, to receiver: HTTP2Session) throws -> Int {
        var total = 0
        while true {
            try sender.produce()
            let pending = sender.pendingOutput
            if pending.isEmpty { return total }
            try receiver.receive(pending.baseAddress!.assumingMemoryBound(to: UInt8.self), count: pending.count)
            total += pending.count
            sender.consumeOutput(pending.count)
        }
    }

    /// A request from the client; returns its stream id.
    func request(body: Bool = true) -> Int32 {
        requestHeaders.withEntries { entries, count in client.submitRequest(headers: entries, count: count, hasBody: body, streamUserData: nil) }
    }

    func respond(_ streamID: Int32, status: Int = 200, body: Bool = false) throws {
        try server.submitResponse(streamID: streamID, headers: HeaderList([(":status", String(status))]), hasBody: body)
    }
}

@Suite struct HTTP2SessionTests {
    @Test("SETTINGS: each side learns the other's stream limit from the preface")
    func settingsAreExchanged() throws {
        let pair = try SessionPair(serverStreams: 7)
        #expect(pair.client.remoteMaximumConcurrentStreams > 7, "before the server's SETTINGS arrive, nghttp2 assumes no limit")
        try pair.exchange()
        #expect(pair.client.remoteMaximumConcurrentStreams == 7)
        #expect(pair.server.remoteMaximumConcurrentStreams == 100)
        try pair.server.submitMaximumConcurrentStreams(1)
        try pair.exchange()
        #expect(pair.client.remoteMaximumConcurrentStreams == 1, "a new SETTINGS lowers the limit, as APNs does after a rejection")
    }

    @Test("a request and its response travel as events: headers, body, end of stream, close with no error")
    func requestAndResponseRoundTrip() throws {
        let pair = try SessionPair()
        try pair.exchange()
        pair.clientEvents.body = Array(#"{"aps":{"alert":"hi"}}"#.utf8)
        let stream = pair.request()
        #expect(stream == 1)
        try pair.exchange()
        #expect(pair.clientEvents.sentHeaders == [1])
        #expect(pair.serverEvents.headers[1]?.contains { $0 == (":path", "/3/device/ab") } == true)
        #expect(pair.serverEvents.data[1] == pair.clientEvents.body)
        #expect(pair.serverEvents.ended == [1])
        pair.serverEvents.body = Array("ok".utf8)
        try pair.respond(1, status: 200, body: true)
        try pair.exchange()
        #expect(pair.clientEvents.headers[1]?.first.map { $0 == (":status", "200") } == true)
        #expect(pair.clientEvents.data[1] == Array("ok".utf8))
        #expect(pair.clientEvents.closed[1] == 0)
    }

    @Test("stream limit: streams above the server's SETTINGS wait in the client until one closes")
    func streamLimitIsObeyed() throws {
        let pair = try SessionPair(serverStreams: 2)
        try pair.exchange()
        let streams = (0..<5).map { _ in pair.request(body: false) }
        try pair.exchange()
        #expect(streams.allSatisfy { $0 > 0 })
        #expect(pair.serverEvents.ended.count == 2, "only two requests may be open on the server at once")
        for stream in pair.serverEvents.ended { try pair.respond(stream) }
        try pair.exchange()
        #expect(pair.serverEvents.ended.count == 4)
        for stream in pair.serverEvents.ended.suffix(2) { try pair.respond(stream) }
        try pair.exchange()
        #expect(pair.serverEvents.ended.count == 5)
    }

    @Test("GOAWAY: streams above its last-stream-id are closed as REFUSED_STREAM (provably unprocessed), the others finish")
    func goAwayRefusesStreamsAboveTheLastID() throws {
        let pair = try SessionPair()
        try pair.exchange()
        let streams = (0..<3).map { _ in pair.request(body: false) }  // 1, 3, 5
        try pair.exchange()
        try pair.server.submitGoAway(lastStreamID: streams[0], errorCode: 0, debugData: Array(#"{"reason":"Shutdown"}"#.utf8))
        try pair.respond(streams[0])
        try pair.exchange()
        #expect(pair.clientEvents.goAway?.lastStreamID == streams[0])
        #expect(pair.clientEvents.goAway?.debugData == #"{"reason":"Shutdown"}"#)
        #expect(pair.clientEvents.closed[streams[0]] == 0)
        for stream in streams.dropFirst() {
            #expect(pair.clientEvents.closed[stream] == UInt32(NGHTTP2_REFUSED_STREAM.rawValue), "stream \(stream)")
        }
    }

    @Test("RST_STREAM: the client sees the server's error code on that stream only")
    func resetReachesTheStream() throws {
        let pair = try SessionPair()
        try pair.exchange()
        let first = pair.request(body: false), second = pair.request(body: false)
        try pair.exchange()
        try pair.server.submitReset(streamID: first, errorCode: UInt32(NGHTTP2_REFUSED_STREAM.rawValue))
        try pair.respond(second)
        try pair.exchange()
        #expect(pair.clientEvents.closed[first] == UInt32(NGHTTP2_REFUSED_STREAM.rawValue))
        #expect(pair.clientEvents.closed[second] == 0)
    }

    @Test("PING: the peer acknowledges by itself; an unanswered PING stays unanswered")
    func pingIsAcknowledged() throws {
        let pair = try SessionPair()
        try pair.exchange()
        try pair.client.submitPing()
        try pair.exchange()
        #expect(pair.clientEvents.pingAcks == 1)
        // A peer that reads nothing (a stalled server): the PING goes out, no ACK comes back.
        try pair.client.submitPing()
        try pair.client.produce()
        #expect(!pair.client.pendingOutput.isEmpty)
        pair.client.discardOutput()
        #expect(pair.clientEvents.pingAcks == 1)
    }

    @Test("flow control: a body larger than the 1 MB stream window arrives whole, through WINDOW_UPDATEs")
    func flowControlCarriesLargeBodies() throws {
        let pair = try SessionPair()
        try pair.exchange()
        pair.clientEvents.body = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let stream = pair.request()
        // Without the receiver's WINDOW_UPDATEs the sender would stop at the window.
        try pair.exchange(rounds: 2_000)
        #expect(pair.serverEvents.data[stream]?.count == 3 << 20)
        #expect(pair.serverEvents.data[stream] == pair.clientEvents.body)
        #expect(pair.serverEvents.ended == [stream])
    }

    @Test("a session that receives garbage fails with a protocol error instead of crashing")
    func garbageIsAProtocolError() throws {
        let pair = try SessionPair()
        let garbage = Array("GET / HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        #expect(throws: TransportError.self) {
            try garbage.withUnsafeBufferPointer { try pair.server.receive($0.baseAddress!, count: $0.count) }
        }
    }
}
