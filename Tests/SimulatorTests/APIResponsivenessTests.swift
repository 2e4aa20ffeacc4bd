#if canImport(Glibc)
import Glibc
#endif
import JSONCore
import RedisTestSupport
import Simulator
import Testing

/// The daemon's HTTP API runs on one thread; these check, on a real daemon with curl, that what
/// is slow behind a route (Redis not answering, the store's token scan) never holds up the others.
@Suite(.serialized) struct APIResponsivenessTests {
    typealias Daemon = ServeTests.Daemon

    /// One request timed by curl itself (`time_total`: connect to last byte), so the test process
    /// spawning curl on a loaded box is not counted: status and seconds.
    static func timed(_ daemon: Daemon, _ method: String, _ path: String, body: String? = nil, admin: Bool = false) -> (status: Int, seconds: Double) {
        var arguments = ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "-X", method, "--max-time", "20"]
        if admin { arguments += ["-H", "Authorization: Bearer \(daemon.token)"] }
        if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
        let run = ChildProcess.run("curl", arguments + ["http://127.0.0.1:\(daemon.port)\(path)"])
        let parts = run.out.split { $0 == " " || $0 == "\n" }
        return (Int(parts.first ?? "") ?? 0, Double(parts.last ?? "") ?? .infinity)
    }

    static func registration(_ number: Int) -> String {
        #"{"app":"\#(testBundle)","environment":"production","pushToStartToken":"\#(FanoutScenario.token(number, prefix: "b1"))","topics":[{"name":"region:9","minLevel":0}]}"#
    }

    @Test func theAPIKeepsAnsweringOtherClientsWhileAnEventSubmissionWaitsOnARedisThatDoesNotAnswer() throws {
        let redis = try RedisServerFixture()
        let proxy = try TCPProxy(to: redis.port)
        defer { proxy.close() }
        let scenario = try FanoutScenario()
        try scenario.register(ClusterEventTests.phones(20))
        // No rate limit: the probes are one client asking many times.
        let daemon = try Daemon(scenario, extra: ClusterEventTests.cluster(proxy.port, node: "a") + #","rateLimit":null"#)
        defer { _ = daemon.stop() }
        #expect(daemon.curl("POST", "/v1/events", body: ClusterEventTests.start(key: "eew-before")).status == 202)

        // Redis stops answering (a dead network path: nothing refused, nothing reset). The next
        // submission waits for its command timeout (a second, and once more after a broken link).
        proxy.cut()
        let submission = ChildProcess("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code} %{time_total}", "--max-time", "30",
                                               "-H", "Authorization: Bearer \(daemon.token)", "-H", "Content-Type: application/json",
                                               "--data-binary", ClusterEventTests.start(key: "eew-while-cut"),
                                               "http://127.0.0.1:\(daemon.port)/v1/events"])
        // Meanwhile: health checks, a phone registering, the token counts, the metrics. Each
        // answers on its own while the submission is still waiting.
        var probes: [(String, Int, Double)] = []
        var submitted: String?
        var number = 0
        while submitted == nil, number < 500 {
            for (method, path, body, admin) in [("GET", "/healthz", nil, false), ("POST", "/v1/installations", Self.registration(number), false),
                                                ("GET", "/v1/tokens/stats", nil, true), ("GET", "/metrics", nil, false)] as [(String, String, String?, Bool)] {
                let (status, seconds) = Self.timed(daemon, method, path, body: body, admin: admin)
                probes.append((path, status, seconds))
            }
            number += 1
            // curl prints its one line (no newline) when the submission ends: readable at EOF.
            submitted = submission.readLine(timeout: 0)
        }
        _ = submission.wait()
        let submissionSeconds = Double(submitted?.split(separator: " ").last ?? "") ?? 0
        // The submission really was stuck on Redis while the probes ran (else this proves nothing).
        #expect(submissionSeconds >= 0.8, "the submission took \(submissionSeconds) s: \(submitted ?? "no answer")")
        #expect(probes.count >= 4)
        for (path, status, seconds) in probes {
            #expect([200, 201].contains(status), "\(path) answered \(status)")
            // Generous for a loaded 2-core box; blocked behind Redis it would be ≥ 1 s.
            #expect(seconds < 0.5, "\(path) took \(seconds) s while the submission waited on Redis")
        }
    }

    @Test func tokenStatisticsComeFromACacheRefreshedWithinFiveSeconds() throws {
        let scenario = try FanoutScenario()
        try scenario.register(ClusterEventTests.phones(30))
        let daemon = try Daemon(scenario)
        defer { _ = daemon.stop() }
        func tokens() throws -> Int64 {
            let answer = daemon.curl("GET", "/v1/tokens/stats")
            #expect(answer.status == 200, "\(answer.body)")
            return try #require(try JSONParser.parse(answer.body)["totalTokens"]?.int64Value, "\(answer.body)")
        }
        let first = try tokens()
        let countedBy = now()

        #expect(daemon.curl("POST", "/v1/installations", body: Self.registration(1), admin: false).status == 201)
        // Asked again at once: the cached count, not a new scan (only if the box was quick enough
        // for "at once" to be well inside the 5 s).
        let again = try tokens()
        if now() - countedBy < 4 { #expect(again == first, "counted again within 5 s of the last count") }
        // The new token shows within 5 s of that count (plus the box's slack), without a restart.
        let deadline = countedBy + 5 + 10
        var latest = again
        while latest == first, now() < deadline {
            usleep(100_000)
            latest = try tokens()
        }
        #expect(latest == first + 1, "the new registration never showed in the counts")
    }
}
