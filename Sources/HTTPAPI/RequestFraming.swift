/// Why a request was refused before evhttp parsed it: the JSON error the handler layer answers in
/// its place (with `Connection: close`).
public struct FramingRefusal: Error, Sendable, Equatable {
    public var status: Int
    public var code: String
    public var message: String
}

/// HTTP/1.1 message framing (RFC 9112), checked on a connection's raw bytes before evhttp reads them.
///
/// evhttp (libevent 2.1) is lenient where leniency lets a request mean two things: it keeps
/// `Content-Length : 5` as a header named "Content-Length " (so the body becomes the next request),
/// takes `Content-Length: +2` as 2, cuts a header value at a NUL, answers a chunk extension with 413
/// and echoes `HTTP/1.2`. This type sees every byte first, in order, and releases to evhttp only
/// what both read the same way:
/// - a request head is held until its blank line, then checked as a whole (request line, field
///   names and values, Content-Length and Transfer-Encoding); a good head is released (`HTTP/1.x`
///   with x > 1 as `HTTP/1.1`, the highest version this server speaks), a bad one is replaced by a
///   stand-in `GET /` and its refusal queued, so the handler layer answers it in JSON;
/// - a body is released as it comes, its end found the way evhttp finds it; chunk-size lines lose
///   their extensions (RFC 9112 §7.1.1: a recipient ignores the ones it does not know);
/// - after a refusal nothing more is released: the connection is answered and closed.
///
/// `verdicts` has one entry per head released, in order; evhttp hands requests to the handler in
/// the same order, so the handler takes the first (nil: serve it).
package struct RequestFraming {
    private enum State {
        case head
        case body(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkEnd
        case trailer
        case refused
    }

    private var state = State.head
    /// The incomplete line being read.
    private var partial: [UInt8] = []
    /// The complete lines of the head being read, without their line ends.
    private var headLines: [[UInt8]] = []
    private var headBytes = 0
    /// Whether the body being read goes to evhttp: not for a method evhttp reads no body for, whose
    /// body is read here and dropped (its head is released without its framing headers).
    private var releasingBody = true
    private let maximumHeadBytes: Int
    package private(set) var verdicts: [FramingRefusal?] = []

    package init(maximumHeadBytes: Int) {
        self.maximumHeadBytes = maximumHeadBytes
    }

    /// The verdict on the next request evhttp hands over; nil when there is none queued.
    mutating func takeVerdict() -> FramingRefusal? {
        verdicts.isEmpty ? nil : verdicts.removeFirst()
    }

    /// Whether no request is being read: nothing of one has come, or the stream is refused.
    package var isBetweenRequests: Bool {
        switch state {
        case .head: partial.isEmpty && headLines.isEmpty
        case .refused: true
        case .body, .chunkSize, .chunkData, .chunkEnd, .trailer: false
        }
    }

    /// Releases nothing more (the stream can no longer be followed).
    mutating func abandon() {
        state = .refused
        partial = []
        headLines = []
    }

    /// Reads `input` and returns the bytes evhttp may read now.
    package mutating func feed(_ input: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var index = 0
        while index < input.count {
            switch state {
            case .refused:
                return out
            case let .body(remaining):
                let count = min(remaining, input.count - index)
                if releasingBody { out += input[index..<index + count] }
                index += count
                state = remaining == count ? .head : .body(remaining: remaining - count)
            case let .chunkData(remaining):
                let count = min(remaining, input.count - index)
                if releasingBody { out += input[index..<index + count] }
                index += count
                state = remaining == count ? .chunkEnd : .chunkData(remaining: remaining - count)
            case .head, .chunkSize, .chunkEnd, .trailer:
                guard let newline = input[index...].firstIndex(of: UInt8(ascii: "\n")) else {
                    partial += input[index...]
                    index = input.count
                    if headBytes + partial.count > maximumHeadBytes { refuse(Self.tooLarge(maximumHeadBytes), into: &out) }
                    continue
                }
                var line = partial + input[index..<newline]
                partial = []
                index = newline + 1
                // CRLF or a bare LF ends a line (RFC 9112 §2.2 lets a recipient take LF alone, and
                // evhttp does); a CR anywhere else is a control character in the line.
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                if headBytes + line.count + 2 > maximumHeadBytes { refuse(Self.tooLarge(maximumHeadBytes), into: &out); continue }
                readLine(line, into: &out)
            }
        }
        return out
    }

    private mutating func readLine(_ line: [UInt8], into out: inout [UInt8]) {
        switch state {
        case .head:
            if line.isEmpty {
                // RFC 9112 §2.2: empty lines before a request line (a client's stray CRLF after a
                // body) are skipped.
                if headLines.isEmpty { return }
                finishHead(into: &out)
            } else {
                headLines.append(line)
                headBytes += line.count + 2
            }
        case .chunkSize:
            guard let size = FramingSyntax.chunkSize(line) else {
                refuse(FramingRefusal(status: 400, code: "invalid_request",
                                      message: "a chunk-size line is not hexadecimal digits with optional ;extensions"), into: &out)
                return
            }
            if releasingBody { out += Array(String(size, radix: 16).utf8) + [13, 10] }
            state = size == 0 ? .trailer : .chunkData(remaining: size)
        case .chunkEnd:
            guard line.isEmpty else {
                refuse(FramingRefusal(status: 400, code: "invalid_request", message: "a chunk's data is longer than its size"), into: &out)
                return
            }
            if releasingBody { out += [13, 10] }
            state = .chunkSize
        case .trailer:
            if line.isEmpty {
                if releasingBody { out += [13, 10] }
                headBytes = 0
                state = .head
                return
            }
            if let refusal = FramingSyntax.fieldProblem(line) { refuse(refusal, into: &out); return }
            headBytes += line.count + 2
            if releasingBody { out += line + [13, 10] }
        case .body, .chunkData, .refused:
            break
        }
    }

    /// A whole head has been read: release it, or the stand-in for its refusal.
    private mutating func finishHead(into out: inout [UInt8]) {
        let lines = headLines
        headLines = []
        headBytes = 0
        switch FramingSyntax.judge(lines) {
        case let .failure(refusal):
            refuse(refusal, into: &out)
        case let .success(head):
            verdicts.append(nil)
            releasingBody = head.releasesBody
            out += head.requestLine + [13, 10]
            for line in lines.dropFirst() where releasingBody || !FramingSyntax.isFramingField(line) { out += line + [13, 10] }
            out += [13, 10]
            switch head.body {
            case .none: state = .head
            case let .length(count): state = count > 0 ? .body(remaining: count) : .head
            case .chunked: state = .chunkSize
            }
        }
    }

    /// Queues `refusal` for the request being read and ends what evhttp reads of it: a head becomes
    /// the stand-in, a chunked body ends at once (its request is answered with the refusal).
    private mutating func refuse(_ refusal: FramingRefusal, into out: inout [UInt8]) {
        switch state {
        case .head:
            verdicts.append(refusal)
            out += Array("GET / HTTP/1.1\r\n\r\n".utf8)
        case .chunkSize, .chunkEnd:
            // A body not released: evhttp already has the whole (body-less) request and may have
            // answered it; nothing more is released, and evhttp's timeout closes the connection.
            guard releasingBody else { break }
            if !verdicts.isEmpty { verdicts[verdicts.count - 1] = refusal }
            out += Array("0\r\n\r\n".utf8)
        case .trailer:
            guard releasingBody else { break }
            if !verdicts.isEmpty { verdicts[verdicts.count - 1] = refusal }
            out += [13, 10]
        case .body, .chunkData, .refused:
            break
        }
        partial = []
        headLines = []
        state = .refused
    }

    private static func tooLarge(_ limit: Int) -> FramingRefusal {
        FramingRefusal(status: 400, code: "invalid_request", message: "the request line and headers are over \(limit) bytes")
    }
}
