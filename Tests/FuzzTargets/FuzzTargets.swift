#if canImport(Glibc)
import Glibc
#endif
import APNs
import FCM
import Daemon
import DaemonConfiguration
import Runtime
import Fanout
import HTTP2
import HTTPAPI
import JSONCore
import TokenStore

/// The fuzz targets: each takes arbitrary bytes and feeds them to one of Sokuho's parsers of
/// untrusted input. A target may throw away any error the parser reports (that is the parser doing
/// its job); it must not crash, trap or touch memory it does not own. Where a parse succeeds, a
/// target also checks a property that must hold for every accepted input (`require`).
///
/// Shared by `sokuho-fuzz` (libFuzzer, built by Toolchain/fuzz) and FuzzTests, which replays
/// Tests/FuzzCorpus/<name>/ through the same functions in a plain `swift test`.
public enum FuzzTargets {
    public struct Target: Sendable {
        public let name: String
        public let run: @Sendable (UnsafeRawBufferPointer) -> Void
    }

    public static let all: [Target] = [
        Target(name: "json", run: json),
        Target(name: "event", run: event),
        Target(name: "registration", run: registration),
        Target(name: "token-line", run: tokenLine),
        Target(name: "apns-response", run: apnsResponse),
        Target(name: "http2-response", run: http2Response),
        Target(name: "api-request", run: apiRequest),
        Target(name: "replicated-write", run: replicatedWrite),
        Target(name: "fcm-response", run: fcmResponse),
        Target(name: "service-account", run: serviceAccount),
        Target(name: "http-framing", run: httpFraming),
    ]

    public static func named(_ name: String) -> Target? { all.first { $0.name == name } }

    /// A property violated on an accepted input: a finding like a crash (libFuzzer keeps the input).
    static func require(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fatalError("fuzz property violated: \(message())") }
    }

    // MARK: Targets

    /// JSONParser: any bytes; an accepted object also passes `validateObject`.
    static func json(_ data: UnsafeRawBufferPointer) {
        guard let value = try? JSONParser.parse(data) else { return }
        if value.isObject {
            require((try? JSONParser.validateObject(data)) != nil, "validateObject refused an object parse accepted")
        }
    }

    /// `POST /v1/events` bodies and `sokuho send` files: FanoutEvent(json:). An accepted event's
    /// canonical JSON is itself an accepted event with the same canonical JSON (what the event's
    /// hash and the store's idempotence rely on).
    static func event(_ data: UnsafeRawBufferPointer) {
        guard let event = try? FanoutEvent(json: Array(data)) else { return }
        _ = event.groupsByPriority
        let again: FanoutEvent
        do { again = try FanoutEvent(json: event.canonicalJSON) } catch {
            require(false, "canonical JSON of an accepted event is refused: \(error)")
            return
        }
        require(again.canonicalJSON == event.canonicalJSON, "canonical JSON is not stable")
    }

    /// A registration stream entry's `ops` (another node's store changes, read from Redis): what
    /// decodes encodes to bytes that decode to the same operations, and that encoding is stable.
    static func replicatedWrite(_ data: UnsafeRawBufferPointer) {
        guard let operations = try? ReplicatedWrite.decode(Array(data)) else { return }
        let encoded = ReplicatedWrite.encode(operations)
        guard let again = try? ReplicatedWrite.decode(encoded) else {
            require(false, "the encoding of decoded operations is refused")
            return
        }
        require(again.map { String(reflecting: $0) } == operations.map { String(reflecting: $0) }, "operations change through the codec")
        require(ReplicatedWrite.encode(again) == encoded, "the encoding is not stable")
    }

    /// How many operations `bytes` decode to (nil: refused), for the test that the seeds are accepted.
    public static func replicatedOperationCount(_ bytes: [UInt8]) -> Int? { try? ReplicatedWrite.decode(bytes).count }

    /// The installation API's bodies: the first byte picks InstallationBody or ActivityBody. An
    /// accepted installation holds at least one token, each of its platform's kinds (never an
    /// FCM token on iOS or an APNs one on Android) and each within the store's bounds for it.
    static func registration(_ data: UnsafeRawBufferPointer) {
        guard let first = data.first else { return }
        let body = Array(data.dropFirst())
        if first & 1 == 0 {
            guard let installation = try? InstallationBody(json: body) else { return }
            require(!installation.tokens.isEmpty, "an accepted installation has no token")
            for (kind, token) in installation.tokens {
                require(Platform(kind: kind) == installation.platform, "a \(kind.name) token in a \(installation.platform) body")
                require((try? StoreLimits.checkToken(token, kind: kind)) != nil, "an accepted \(kind.name) token the store refuses")
            }
            require(installation.platform == .ios || installation.broadcast == nil, "broadcast accepted on Android")
        } else {
            _ = try? ActivityBody(json: body)
        }
    }

    /// `sokuho tokens import` lines (one line, no newline handling: the importer splits first).
    static func tokenLine(_ data: UnsafeRawBufferPointer) {
        _ = try? TokenLineParser.parseLine(data, now: 1_760_000_000_000)
    }

    /// An APNs answer as the sender sees it: the first two bytes are the status (mod 1000), the rest
    /// the body; the body also goes through the GOAWAY debug-data path, as bytes and as text.
    static func apnsResponse(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 2 else { return }
        let status = (Int(data[0]) << 8 | Int(data[1])) % 1000
        let body = UnsafeRawBufferPointer(rebasing: data[2...])
        let response = Response(status: status, apnsID: "77DD8B17-8E56-4A8D-9C0A-6A5A1B3F7B0C", body: body)
        if let reason = response.reason {
            require(Reason(reason.name) == reason, "reason '\(reason.name)' does not read back as itself")
            _ = reason.action
        }
        _ = response.shouldRemoveToken(registeredAt: 1_760_000_000_000)
        _ = ErrorBody.goAwayReason(debugData: body)
        _ = ErrorBody.goAwayReason(debugData: String(decoding: body, as: UTF8.self))
    }

    /// An FCM answer and a token endpoint's answer as the sender reads them: the first two bytes are
    /// the status (mod 1000), the third says whether a `retry-after` follows (its text up to the
    /// first NUL), the rest is the body. An access token taken must be a header-safe value, and a
    /// refusal that names a field must name one the body held.
    static func fcmResponse(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 3 else { return }
        let status = (Int(data[0]) << 8 | Int(data[1])) % 1000
        var rest = UnsafeRawBufferPointer(rebasing: data[3...])
        var retryAfter: String?
        if data[2] & 1 == 1, let nul = rest.firstIndex(of: 0) {
            retryAfter = String(decoding: rest[..<nul], as: UTF8.self)
            rest = UnsafeRawBufferPointer(rebasing: rest[(nul + 1)...])
        }
        let response = FCMResponse(status: status, retryAfter: retryAfter, body: rest)
        if let wait = response.retryAfter { require(wait >= .zero && wait <= .seconds(86_400), "Retry-After \(wait) outside 0...1 day") }
        if let field = response.failedField { require(!field.isEmpty || rest.count > 0, "a field named from an empty body") }
        if case let .granted(token) = OAuthTokenResponse(status: status, body: rest) {
            require(token.value.utf8.allSatisfy { (0x21...0x7e).contains($0) }, "an access token that could split a header")
        }
    }

    /// A service-account file as an operator downloads (or mangles) it: accepted only with every
    /// member Google's sender needs, and then it writes back as a file that reads as the same.
    static func serviceAccount(_ data: UnsafeRawBufferPointer) {
        guard let account = try? ServiceAccount(json: Array(data)) else { return }
        require(ServiceAccount.isProjectID(account.projectID), "accepted project_id '\(account.projectID)'")
        let again = try? ServiceAccount(json: account.googleLayoutJSON(clientID: "1"))
        require(again == account, "a service account does not read back as itself")
    }

    /// Bytes from an API client through the framing check that stands before evhttp: the first byte
    /// says where the stream is cut in two reads; any cut must release the same bytes with the
    /// same verdicts as one read (a client cannot make its request mean something else by how it
    /// splits its writes), and what is released never outgrows the input by more than the
    /// stand-in request each refusal puts in its place.
    static func httpFraming(_ data: UnsafeRawBufferPointer) {
        guard data.count >= 1 else { return }
        let bytes = Array(data[1...])
        let cut = bytes.isEmpty ? 0 : Int(data[0]) % (bytes.count + 1)
        var whole = RequestFraming(maximumHeadBytes: 1024)
        let once = whole.feed(bytes)
        var split = RequestFraming(maximumHeadBytes: 1024)
        let twice = split.feed(Array(bytes[..<cut])) + split.feed(Array(bytes[cut...]))
        require(once == twice && whole.verdicts == split.verdicts, "a cut at \(cut) of \(bytes.count) bytes changes what evhttp reads")
        require(once.count <= bytes.count + 64 * whole.verdicts.count, "released \(once.count) bytes from \(bytes.count)")
    }

    /// Bytes from "APNs" into a client HTTP2Session (nghttp2 and our callbacks) that has sent one
    /// request on stream 1: the response's status, apns-id and body become a `Response`; a GOAWAY's
    /// debug data goes through `ErrorBody.goAwayReason` as the sender reads it.
    static func http2Response(_ data: UnsafeRawBufferPointer) {
        _ = http2Answer(data)
    }

    /// What `http2Response` makes of `data`: stream 1's response and the GOAWAY's reason, if any
    /// (FuzzTests checks that the seeds get that far).
    public static func http2Answer(_ data: UnsafeRawBufferPointer) -> (response: Response?, goAwayReason: Reason?) {
        let sink = HTTP2ResponseSink()
        guard let session = try? HTTP2Session(role: .client, delegate: sink, maximumConcurrentStreams: 100) else { return (nil, nil) }
        let request = HTTP2ResponseSink.request
        _ = session.submitRequest(headers: request.entries, count: request.count, hasBody: false, streamUserData: nil)
        try? session.produce()
        session.discardOutput()
        if let base = data.baseAddress?.assumingMemoryBound(to: UInt8.self) { try? session.receive(base, count: data.count) }
        try? session.produce()
        session.discardOutput()
        let response = sink.ended ? Response(status: sink.status, apnsID: sink.apnsID, body: sink.body) : nil
        return (response, sink.goAwayReason)
    }

    /// The API server's request as the router gets it: "METHOD PATH" on the first line, then
    /// "name: value" header lines, an empty line and the body. Exercises what the router does with a
    /// request short of a running `Service` (which needs a token store and connection pools): the
    /// client address for the rate limiter, the event URL encoding (it must decode back to the id),
    /// and the body parsers the path leads to.
    static func apiRequest(_ data: UnsafeRawBufferPointer) {
        let bytes = Array(data)
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var bodyStart = bytes.count
        for index in bytes.indices where bytes[index] == 0x0a {
            let line = bytes[start..<index]
            start = index + 1
            if line.isEmpty && !lines.isEmpty { bodyStart = start; break }
            lines.append(line)
        }
        if bodyStart == bytes.count && start < bytes.count { lines.append(bytes[start...]) }
        guard let requestLine = lines.first else { return }
        let parts = requestLine.split(separator: 0x20, maxSplits: 1)
        guard parts.count == 2 else { return }
        let method = String(decoding: parts[0], as: UTF8.self)
        let path = String(decoding: parts[1], as: UTF8.self)
        var headers: [(String, String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
            headers.append((String(decoding: line[..<colon], as: UTF8.self),
                            String(decoding: line[(colon + 1)...].drop { $0 == 0x20 }, as: UTF8.self)))
        }
        let request = HTTPRequestParts(method: method, path: path, headers: headers, body: Array(bytes[bodyStart...]))
        _ = Router.host(of: request.header("x-client-address") ?? path)
        if path.hasPrefix("/v1/events/") {
            let id = String(path.dropFirst("/v1/events/".count))
            let url = Router.eventURL(id)
            require(percentDecoded(url) == Array(("/v1/events/" + id).utf8), "event URL '\(url)' does not decode to its id")
        }
        switch (method, path) {
        case ("POST", "/v1/events"): _ = try? FanoutEvent(json: request.body)
        case ("POST", "/v1/installations"): _ = try? InstallationBody(json: request.body)
        case ("PUT", _) where path.hasPrefix("/v1/installations/"): _ = try? InstallationBody(json: request.body)
        case ("POST", _) where path.hasPrefix("/v1/installations/") && path.hasSuffix("/activities"): _ = try? ActivityBody(json: request.body)
        default: break
        }
    }

    /// %XX → byte, as evhttp decodes a path (no '+' rule in paths).
    static func percentDecoded(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        var index = 0
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 0x30...0x39: return byte - 0x30
            case 0x41...0x46: return byte - 0x41 + 10
            case 0x61...0x66: return byte - 0x61 + 10
            default: return nil
            }
        }
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }
}

/// The parts of an API request the fuzz target routes on (HTTPRequest without the HTTPAPI import).
struct HTTPRequestParts {
    var method: String
    var path: String
    var headers: [(String, String)]
    var body: [UInt8]

    func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name }?.1 }
}

/// Collects stream 1's response the way ClientConnection does (its `:status` arithmetic included).
final class HTTP2ResponseSink: HTTP2SessionDelegate {
    static let request = HeaderList([(name: ":method", value: "POST"), (name: ":scheme", value: "https"),
                                     (name: ":path", value: "/3/device/00fc13adff785122b4ad28809a3420982341241421348097878e577c991de8f0"),
                                     (name: ":authority", value: "api.sandbox.push.apple.com")])
    var status = 0
    var apnsID: String?
    var body: [UInt8] = []
    var ended = false
    var goAwayReason: Reason?

    func sessionBeganHeaders(streamID: Int32) {}
    func sessionReceivedHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        if name.count == 7, name.elementsEqual(":status".utf8) {
            var status = 0
            for digit in value { status = status * 10 + Int(digit &- 48) }
            self.status = status
        } else if name.elementsEqual("apns-id".utf8) {
            apnsID = String(decoding: value, as: UTF8.self)
        }
    }
    func sessionReceivedData(streamID: Int32, data: UnsafeBufferPointer<UInt8>) {
        if body.count + data.count <= 64 * 1024 { body.append(contentsOf: data) }
    }
    func sessionReceivedEndOfStream(streamID: Int32) { ended = true }
    func sessionSentHeaders(streamID: Int32) {}
    func sessionCouldNotSendHeaders(streamID: Int32, userData: UnsafeMutableRawPointer?) {}
    func sessionClosedStream(streamID: Int32, errorCode: UInt32) {}
    func sessionReceivedGoAway(lastStreamID: Int32, errorCode: UInt32, debugData: UnsafeBufferPointer<UInt8>) {
        goAwayReason = ErrorBody.goAwayReason(debugData: String(decoding: debugData, as: UTF8.self))
        _ = goAwayReason?.action
    }
    func sessionReceivedPingAcknowledgement() {}
    func sessionReadBody(streamID: Int32, source: UnsafeMutableRawPointer?, into buffer: UnsafeMutablePointer<UInt8>,
                         length: Int, endOfData: inout Bool) -> Int {
        endOfData = true
        return 0
    }
}

// MARK: Corpus files (the replay test and the replaying sokuho-fuzz)

extension FuzzTargets {
    /// `path` itself if it is a file, else the regular files in it (not recursive), sorted.
    public static func files(at path: String) -> [String] {
        guard let directory = opendir(path) else { return [path] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(".") { continue }
            var info = stat()
            if stat(path + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG { names.append(path + "/" + name) }
        }
        return names.sorted()
    }

    public static func read(_ path: String) -> [UInt8]? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return ferror(file) == 0 ? bytes : nil
    }
}
