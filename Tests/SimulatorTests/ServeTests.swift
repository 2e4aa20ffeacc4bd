#if canImport(Glibc)
import Glibc
#endif
import JSONCore
import Simulator
import Testing

/// `sokuho serve` as a real process, driven with curl: an event submitted over the API reaches
/// every eligible phone on the daemon's warm connections, its report and `/metrics` say so, and a
/// restart keeps the report.
@Suite struct ServeTests {
    /// A running daemon for one scenario's store and simulator.
    final class Daemon {
        let child: ChildProcess
        let port: Int
        let token = "test-admin-token-0123456789abcdef"

        init(_ scenario: FanoutScenario, statusPage: Bool = true) throws {
            let tokenFile = writeFile(scenario.directory, "admin.token", "test-admin-token-0123456789abcdef\n")
            chmod(tokenFile, 0o600)
            chmod(scenario.running.certificates.providerKey, 0o600)
            let config = writeFile(scenario.directory, "sokuho.json", """
                {"apps":[{"bundleID":"\(testBundle)","teamID":"\(SimulatorCertificates.teamID)","keyID":"\(SimulatorCertificates.keyID)",
                  "keyFile":"\(scenario.running.certificates.providerKey)","environment":"production",
                  "host":"127.0.0.1:\(scenario.running.port)","manageHost":"127.0.0.1:\(scenario.running.managePort)",
                  "caFile":"\(scenario.running.certificates.ca)","connections":2,"streams":100}],
                 "listen":["127.0.0.1:0"],"storePath":"\(scenario.store)","adminTokenFile":"\(tokenFile)","keepaliveSeconds":10,"statusPage":\(statusPage)}
                """)
            child = ChildProcess(SimulatorProcessTests.binary, ["serve", "--config", config])
            let line = try #require(child.readLine(timeout: 20), "the daemon printed nothing: \(child.stderr)")
            let parsed = try JSONParser.parse(line)
            let listen = try #require(parsed["listen"]?.arrayValue?.first?.stringValue, "\(line)")
            port = try #require(Int(listen.split(separator: ":").last ?? ""))
        }

        /// curl against the daemon: status and body.
        func curl(_ method: String, _ path: String, body: String? = nil, admin: Bool = true) -> (status: Int, body: String) {
            var arguments = ["-sS", "-o", "-", "-w", "\n%{http_code}", "-X", method, "--max-time", "20"]
            if admin { arguments += ["-H", "Authorization: Bearer \(token)"] }
            if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
            let run = ChildProcess.run("curl", arguments + ["http://127.0.0.1:\(port)\(path)"])
            // Body, then the status on a line of its own (`-w`); `readRest` ends every line with a newline.
            var lines = run.out.split(separator: "\n", omittingEmptySubsequences: false)
            while lines.last == "" { lines.removeLast() }
            return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
        }

        /// Polls an event until it is no longer queued or running.
        func waitForEvent(_ path: String) throws -> JSONValue {
            for _ in 0..<200 {
                let answer = curl("GET", path)
                if answer.status == 200, let json = try? JSONParser.parse(answer.body),
                   let state = json["state"]?.stringValue, state != "queued" && state != "running" {
                    return json
                }
                usleep(50_000)
            }
            throw TestFailure("the event did not finish")
        }

        func stop() -> Int32 {
            kill(child.pid, SIGTERM)
            return child.wait()
        }
    }

    struct TestFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func anEventSubmittedOverTheAPIReachesEveryPhoneAndItsReportSurvivesARestart() throws {
        let scenario = try FanoutScenario()
        let phones = (0..<1_000).map { FanoutScenario.Phone(id: "p\($0)", token: FanoutScenario.token($0), topics: [("region:0", UInt8($0 % 4))]) }
        try scenario.register(phones)
        let eligible = phones.filter { $0.topics[0].1 <= 2 }.count
        var daemon = try Daemon(scenario)
        // The warm pool is up before any event.
        var ready = daemon.curl("GET", "/readyz", admin: false)
        for _ in 0..<100 where ready.status != 200 { usleep(50_000); ready = daemon.curl("GET", "/readyz", admin: false) }
        #expect(ready.status == 200, "\(ready.body)")
        for _ in 0..<100 where scenario.running.counters.connections < 2 { usleep(50_000) }
        #expect(scenario.running.counters.connections == 2)

        let event = startEvent(key: "eew-serve", groups: [("region:0", 2, "served")], channel: "null")
        #expect(daemon.curl("POST", "/v1/events", body: event, admin: false).status == 401)
        let accepted = daemon.curl("POST", "/v1/events", body: event)
        #expect(accepted.status == 202, "\(accepted.body)")
        let url = try #require(try JSONParser.parse(accepted.body)["url"]?.stringValue)
        let finished = try daemon.waitForEvent(url)
        #expect(finished["state"]?.stringValue == "done", "\(finished.jsonText)")
        #expect(finished["report"]?["delivered"]?.int64Value == Int64(eligible))
        #expect(scenario.running.counters.accepted == eligible)
        // The event went out on the warm connections: none was opened for it.
        #expect(scenario.running.counters.connections == 2)

        let metrics = daemon.curl("GET", "/metrics", admin: false)
        #expect(metrics.body.contains(#"sokuho_pushes_total{app="com.example.eew/production",kind="start",outcome="delivered"} \#(eligible)"#),
                "\(metrics.body)")
        #expect(metrics.body.contains(#"sokuho_connections_up{app="com.example.eew/production"} 2"#))
        // The same event again: already sent, nothing more on the wire.
        let again = daemon.curl("POST", "/v1/events", body: event)
        #expect(again.status == 200 && again.body.contains(#""alreadySent":true"#), "\(again.body)")
        #expect(daemon.stop() == 0)

        daemon = try Daemon(scenario)
        let after = daemon.curl("GET", url)
        #expect(after.status == 200)
        #expect(try JSONParser.parse(after.body)["report"]?["delivered"]?.int64Value == Int64(eligible))
        #expect(daemon.stop() == 0)
        #expect(scenario.running.counters.accepted == eligible)
    }

    /// The status page as a real browser renders it: headless Chromium loads `GET /` and its DOM
    /// shows the finished event with its delivered count and delivery curve. The screenshot stays
    /// in the scenario's directory for a person to look at.
    @Test func theStatusPageShowsAFinishedEventInABrowser() throws {
        let scenario = try FanoutScenario()
        let phones = (0..<200).map { FanoutScenario.Phone(id: "p\($0)", token: FanoutScenario.token($0), topics: [("region:0", 1)]) }
        try scenario.register(phones)
        let daemon = try Daemon(scenario)
        defer { _ = daemon.stop() }
        let accepted = daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-status&quake", groups: [("region:0", 1, "status page")], channel: "null"))
        #expect(accepted.status == 202, "\(accepted.body)")
        let url = try #require(try JSONParser.parse(accepted.body)["url"]?.stringValue)
        let finished = try daemon.waitForEvent(url)
        #expect(finished["report"]?["delivered"]?.int64Value == Int64(phones.count), "\(finished.jsonText)")

        // The raw HTML: the event key escaped, no token anywhere, no script.
        let page = daemon.curl("GET", "/", admin: false)
        #expect(page.status == 200)
        #expect(page.body.contains("eew-status&amp;quake"), "\(page.body)")
        #expect(!page.body.contains("eew-status&quake"))
        #expect(!page.body.contains(daemon.token) && !page.body.contains(FanoutScenario.token(0)) && !page.body.contains("<script"))

        // A profile of its own in the scenario's directory: nothing written to $HOME, no state
        // shared with another run.
        // No browser is a failure naming the fix, never a skipped pass.
        let found = ChildProcess.run("sh", ["-c", "command -v chromium"])
        try #require(found.status == 0, "no chromium on PATH: run Toolchain/setup --for-tests (Debian's chromium package)")
        let browser = ["--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(scenario.directory)/chromium"]
        let dom = ChildProcess.run("chromium", browser + ["--dump-dom", "http://127.0.0.1:\(daemon.port)/"])
        #expect(dom.status == 0, "\(dom.err)")
        #expect(dom.out.contains("<svg"), "\(dom.out)")
        #expect(dom.out.contains("<polyline"), "\(dom.out)")
        #expect(dom.out.contains("eew-status&amp;quake"), "\(dom.out)")
        #expect(dom.out.contains("\(phones.count) / \(phones.count)"), "\(dom.out)")
        #expect(dom.out.contains("com.example.eew/production"))

        let screenshot = scenario.directory + "/status-page.png"
        let shot = ChildProcess.run("chromium", browser + ["--screenshot=\(screenshot)", "--window-size=1200,900", "http://127.0.0.1:\(daemon.port)/"])
        #expect(shot.status == 0, "\(shot.err)")
        #expect(readFile(screenshot).starts(with: [0x89, 0x50, 0x4E, 0x47]), "no PNG at \(screenshot)")
        print("status page screenshot: \(screenshot)")
    }

    @Test func theStatusPageIsNotFoundWhenTurnedOff() throws {
        let scenario = try FanoutScenario()
        let daemon = try Daemon(scenario, statusPage: false)
        defer { _ = daemon.stop() }
        let page = daemon.curl("GET", "/", admin: false)
        #expect(page.status == 404, "\(page.body)")
        #expect(daemon.curl("GET", "/metrics", admin: false).status == 200)
    }

    @Test func badRequestsGetAJSONErrorNamingTheProblem() throws {
        let scenario = try FanoutScenario()
        let daemon = try Daemon(scenario)
        defer { _ = daemon.stop() }
        let wrongToken = ChildProcess.run("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Authorization: Bearer nope",
                                                   "http://127.0.0.1:\(daemon.port)/v1/events"])
        #expect(wrongToken.out.hasPrefix("401"), "\(wrongToken.out)")
        let invalid = daemon.curl("POST", "/v1/events", body: #"{"app":"com.example.eew","environment":"production","key":"k","kind":"start","groups":[{"topic":"a","level":300}]}"#)
        #expect(invalid.status == 400)
        let error = try JSONParser.parse(invalid.body)["error"]
        #expect(error?["code"]?.stringValue == "invalid_event")
        #expect(error?["message"]?.stringValue?.contains("groups[0].level") == true, "\(invalid.body)")
        let unknownApp = daemon.curl("POST", "/v1/events", body: startEvent(groups: [("a", 1, "x")]).replacing(testBundle, with: "com.example.other"))
        #expect(unknownApp.status == 422, "\(unknownApp.body)")
        #expect(daemon.curl("GET", "/v1/nothing").status == 404)
        #expect(daemon.curl("GET", "/healthz", admin: false).status == 200)
    }
}
