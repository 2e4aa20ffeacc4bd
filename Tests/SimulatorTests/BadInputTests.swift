#if canImport(Glibc)
import Glibc
#endif
import JSONCore
import Simulator
import Testing

/// The bad-input corpus (`BadInputs/`, one folder per entry point, see its README): every CLI case
/// run through the built binary, every API case sent to one `sokuho serve`. Each must be refused
/// with its stable exit code (or HTTP status and `error.code`) and a message naming the field or
/// the fix, without a crash trace, a signal or a hang; the daemon must answer `/healthz` after all.
@Suite struct BadInputTests {
    static var corpus: String {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast()
        return parts.joined(separator: "/") + "/BadInputs"
    }

    static let commandFolders = ["cli", "config", "events", "token-lines", "keys", "certificates"]

    /// What a crashed Swift program leaves on stderr.
    static let crashMarks = ["Fatal error", "Stack dump", "Illegal instruction", "Segmentation fault", "Current stack trace", "💣"]

    /// The cases of one manifest, one JSON object per non-empty line.
    static func cases(_ folder: String) throws -> [JSONValue] {
        let text = String(decoding: readFile(corpus + "/" + folder + "/cases.jsonl"), as: UTF8.self)
        return try text.split(separator: "\n").map { try JSONParser.parse(String($0)) }
    }

    /// The case's input bytes: a file of the folder, inline text (placeholders replaced), hex, or
    /// generated (prefix + repeat × count + suffix); nil when it has none.
    static func input(_ test: JSONValue, folder: String, substitute: (String) -> String) -> [UInt8]? {
        if let file = test["file"]?.stringValue { return readFile(corpus + "/" + folder + "/" + file) }
        if let text = test["text"]?.stringValue { return Array(substitute(text).utf8) }
        if let hex = test["hex"]?.stringValue { return Array(hex: hex) }
        if let spec = test["generate"] { return generate(spec) }
        return nil
    }

    static func generate(_ spec: JSONValue) -> [UInt8] {
        let unit = Array((spec["repeat"]?.stringValue ?? "").utf8)
        let count = Int(spec["count"]?.int64Value ?? 0)
        var bytes = Array((spec["prefix"]?.stringValue ?? "").utf8)
        bytes.reserveCapacity(bytes.count + unit.count * count + 64)
        for _ in 0..<count { bytes += unit }
        bytes += Array((spec["suffix"]?.stringValue ?? "").utf8)
        return bytes
    }

    struct Outcome {
        var status: Int32
        var out: String
        var err: String
        var hung: Bool
    }

    /// Runs the binary; after `seconds` it is killed and the outcome says it hung.
    /// `environment`: `NAME=VALUE` pairs set for this run only (through env(1)).
    static func run(_ arguments: [String], environment: [String] = [], seconds: Double = 20) -> Outcome {
        let child = environment.isEmpty ? ChildProcess(SimulatorProcessTests.binary, arguments)
            : ChildProcess("env", environment + [SimulatorProcessTests.binary] + arguments)
        let deadline = MonotonicClock.now + seconds
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var hung = false
        reading: while true {
            let left = deadline - MonotonicClock.now
            if left <= 0 { hung = true; break }
            var poller = pollfd(fd: child.stdout, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(min(left, 1) * 1000) + 1)
            if ready < 0 && errno != EINTR { break }
            guard ready > 0 else { continue }
            let n = chunk.withUnsafeMutableBytes { read(child.stdout, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break reading }
            out += chunk[0..<n]
        }
        var status: Int32 = 0
        while !hung {
            let done = waitpid(child.pid, &status, WNOHANG)
            if done == child.pid { break }
            if done < 0 && errno != EINTR { break }
            if MonotonicClock.now > deadline { hung = true; break }
            usleep(5_000)
        }
        if hung {
            kill(child.pid, SIGKILL)
            while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
        }
        let signal = status & 0x7f
        let code = signal == 0 ? (status >> 8) & 0xff : 128 + signal
        return Outcome(status: code, out: String(decoding: out, as: UTF8.self), err: child.stderr, hung: hung)
    }

    @Test func everyBadInputIsRefusedWithAStableCodeAClearMessageAndNoCrash() throws {
        try #require(access(SimulatorProcessTests.binary, X_OK) == 0, "build the binary first: swift build (\(SimulatorProcessTests.binary))")
        // The simulator (a server for the certificate cases, an app for the daemon) and valid
        // credentials, so each case has exactly one thing wrong.
        let scenario = try FanoutScenario()
        let shared = temporaryDirectory("sokuho-badinput")
        let key = writeFile(shared, "AuthKey_SIMKEY0001.p8", readFile(scenario.running.certificates.providerKey))
        chmod(key, 0o600)
        let ca = writeFile(shared, "ca.pem", readFile(scenario.running.certificates.ca))
        let adminToken = writeFile(shared, "admin.token", "bad-input-admin-token-0123456789\n")
        chmod(adminToken, 0o600)
        // The corpus's files as `{root}`, readable by their owner only: a git checkout makes them
        // 0644, and a key readable by others is refused for that before what the case is about.
        let root = shared + "/corpus"
        let copy = ChildProcess.run("sh", ["-c", "cp -r \"$0\" \"$1\" && chmod -R go-rwx \"$1\"", Self.corpus, root])
        try #require(copy.status == 0, "copying the corpus: \(copy.err)")
        var tried = 0
        var failures: [String] = []

        for folder in Self.commandFolders {
            for (index, test) in try Self.cases(folder).enumerated() {
                tried += 1
                let name = "\(folder)/cases.jsonl:\(index + 1) \(test["name"]?.stringValue ?? "?")"
                let directory = temporaryDirectory("sokuho-badcase")
                var values: [(String, String)] = [
                    ("{dir}", directory), ("{store}", directory + "/store"), ("{root}", root), ("{key}", key), ("{ca}", ca),
                    ("{host}", "127.0.0.1:\(scenario.running.port)"), ("{manageHost}", "127.0.0.1:\(scenario.running.managePort)"),
                    ("{dead}", "127.0.0.1:1"), ("{token}", deviceToken("f1")), ("{adminToken}", adminToken),
                    ("{serviceAccount}", scenario.running.simulator.fcmServiceAccountFile),
                ]
                let substitute = { (text: String) -> String in
                    var text = text
                    for (placeholder, value) in values { text = text.replacing(placeholder, with: value) }
                    return text
                }
                if let bytes = Self.input(test, folder: folder, substitute: substitute) {
                    let path = writeFile(directory, test["as"]?.stringValue ?? "input", bytes)
                    chmod(path, 0o600)
                    values.append(("{input}", path))
                    values.append(("{inputText}", String(decoding: bytes, as: UTF8.self)))
                }
                let arguments = (test["args"]?.arrayValue ?? []).compactMap(\.stringValue).map(substitute)
                let expected = Int32(test["exit"]?.int64Value ?? -1)
                let wanted = test["stderr"]?.stringValue ?? ""
                let environment = (test["env"]?.objectMembers ?? []).map { "\($0.key)=\(substitute($0.value.stringValue ?? ""))" }
                let outcome = Self.run(arguments, environment: environment)
                var problems: [String] = []
                if outcome.hung { problems.append("hung: killed after 20 s") }
                if outcome.status >= 128 { problems.append("ended by signal \(outcome.status - 128)") }
                if outcome.status != expected { problems.append("exit \(outcome.status), expected \(expected)") }
                if !outcome.err.contains(wanted) { problems.append("stderr lacks '\(wanted)'") }
                if let mark = Self.crashMarks.first(where: { outcome.err.contains($0) || outcome.out.contains($0) }) { problems.append("crash trace ('\(mark)')") }
                let lines = outcome.err.split(separator: "\n")
                let allowed = Int(test["stderrLines"]?.int64Value ?? 1)
                if lines.count > allowed { problems.append("\(lines.count) stderr lines, at most \(allowed) expected") }
                if expected != 0, !(lines.last?.hasPrefix("sokuho") ?? false) { problems.append("the last stderr line does not start with 'sokuho'") }
                if let out = test["stdout"]?.stringValue {
                    if !outcome.out.contains(out) { problems.append("stdout lacks '\(out)'") }
                } else if !outcome.out.isEmpty {
                    problems.append("stdout is not empty")
                }
                if !problems.isEmpty {
                    failures.append("\(name): \(problems.joined(separator: "; "))\n  stderr: \(outcome.err.prefix(600))\n  stdout: \(outcome.out.prefix(300))")
                }
            }
        }

        // The API: one daemon for every body and header case (no rate limit: the corpus is sent
        // faster than a phone would).
        let daemon = try ServeTests.Daemon(scenario, extra: #","rateLimit":null"#)
        defer { _ = daemon.stop() }
        for (index, test) in try Self.cases("api").enumerated() {
            tried += 1
            let name = "api/cases.jsonl:\(index + 1) \(test["name"]?.stringValue ?? "?")"
            let directory = temporaryDirectory("sokuho-badapi")
            var body: String?
            if let bytes = Self.input(test, folder: "api", substitute: { $0 }) { body = "@" + writeFile(directory, "body", bytes) }
            var headers = (test["headers"]?.arrayValue ?? []).compactMap(\.stringValue)
            if let spec = test["headersGenerate"] { headers.append(String(decoding: Self.generate(spec), as: UTF8.self)) }
            if test["chunked"]?.boolValue == true { headers.append("Transfer-Encoding: chunked") }
            let path = test["pathGenerate"].map { String(decoding: Self.generate($0), as: UTF8.self) } ?? test["path"]?.stringValue ?? "/"
            var problems: [String] = []
            let answer: ServeTests.Daemon.Exchange
            if let raw = test["raw"]?.stringValue {
                // What curl will not send: the request's bytes as written, on a socket of its own.
                let sent = Self.rawExchange(port: daemon.port, Array(raw.replacing("{adminToken}", with: daemon.token).utf8))
                answer = ServeTests.Daemon.Exchange(status: sent.status, headers: [:], body: sent.body)
                if let head = test["head"]?.stringValue, !sent.head.contains(head) { problems.append("the answer's head lacks '\(head)': \(sent.head)") }
                if sent.answers != 1 { problems.append("\(sent.answers) answers, expected one") }
            } else {
                answer = daemon.exchange(test["method"]?.stringValue ?? "GET", path, body: body,
                                         admin: test["admin"]?.boolValue ?? true, headers: headers)
            }
            let status = Int(test["status"]?.int64Value ?? 0)
            if answer.status != status { problems.append("status \(answer.status), expected \(status)") }
            if let code = test["code"]?.stringValue {
                let json = try? JSONParser.parse(answer.body)
                if json?["error"]?["code"]?.stringValue != code { problems.append("error.code is not '\(code)'") }
                let message = json?["error"]?["message"]?.stringValue ?? ""
                if message.isEmpty { problems.append("no error.message") }
                if let wanted = test["message"]?.stringValue, !message.contains(wanted) { problems.append("error.message lacks '\(wanted)'") }
            }
            if let mark = Self.crashMarks.first(where: { answer.body.contains($0) }) { problems.append("crash trace ('\(mark)')") }
            if !problems.isEmpty { failures.append("\(name): \(problems.joined(separator: "; "))\n  body: \(answer.body.prefix(600))") }
        }
        // None of it took the daemon down.
        var status: Int32 = 0
        #expect(waitpid(daemon.child.pid, &status, WNOHANG) == 0, "the daemon exited during the corpus: \(daemon.child.stderr)")
        let health = daemon.curl("GET", "/healthz", admin: false)
        #expect(health.status == 200, "/healthz after the corpus: \(health.status) \(health.body)")

        for failure in failures { Issue.record("\(failure)") }
        if failures.isEmpty {
            print("bad inputs tried: \(tried); all refused with a stable code")
        } else {
            print("bad inputs tried: \(tried); \(failures.count) not refused as the corpus expects")
        }
    }
}

extension BadInputTests {
    /// Sends `request` on a connection of its own, half-closes it, and reads until the daemon
    /// closes it (20 s at most): the first answer's status, head and body, and how many answers came.
    static func rawExchange(port: Int, _ request: [UInt8]) -> (status: Int, head: String, body: String, answers: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return (0, "", "socket failed", 0) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7f00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return (0, "", "connect failed", 0) }
        var sent = 0
        while sent < request.count {
            let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { break }
            sent += n
        }
        shutdown(fd, Int32(SHUT_WR))
        var received: [UInt8] = []
        let deadline = MonotonicClock.now + 20
        var chunk = [UInt8](repeating: 0, count: 65536)
        while MonotonicClock.now < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 1000) >= 0 else { break }
            if poller.revents == 0 { continue }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            received += chunk[..<n]
        }
        let text = String(decoding: received, as: UTF8.self)
        guard let end = text.firstRange(of: "\r\n\r\n") else { return (0, text, "", 0) }
        let head = String(text[..<end.lowerBound])
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? 0
        let answers = text.ranges(of: "\r\n\r\n").count
        let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.dropFirst("content-length:".count).trimmingPrefix(" ")) } ?? 0
        let body = String(decoding: Array(text[end.upperBound...].utf8).prefix(length), as: UTF8.self)
        return (status, head, body, answers - (body.contains("\r\n\r\n") ? 1 : 0))
    }
}

/// Seconds on the monotonic clock, for the run deadline.
private enum MonotonicClock {
    static var now: Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
