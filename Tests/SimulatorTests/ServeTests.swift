#if canImport(Glibc)
import Glibc
#endif
import Crypto
import IO
import JSONCore
import Simulator
import Testing
import Vocabulary

/// `sokuho serve` as a real process, driven with curl: an event submitted over the API reaches
/// every eligible phone on the daemon's warm connections, its report and `/metrics` say so, and a
/// restart keeps the report.
@Suite struct ServeTests {
    /// A running daemon for one scenario's store and simulator.
    final class Daemon {
        let child: ChildProcess
        let port: Int
        /// The JSON line the daemon prints first (`listen`, `standby`).
        let startLine: JSONValue
        let token = "test-admin-token-0123456789abcdef"

        /// `extra`: more members of the configuration object, each with a leading comma.
        /// `keyID`: another than the simulator's makes every request's provider token invalid.
        /// `connections`, `streams`: the app's pool (its starts handed out unanswered: connections × streams plus a quarter, `HandOutGate`).
        /// `store`, `name`: another store and configuration file than the scenario's, for a second
        /// node of a cluster on the same simulator (the file is named after the store unless named).
        init(_ scenario: FanoutScenario, statusPage: Bool = true, keyID: String = SimulatorCertificates.keyID, extra: String = "",
             connections: Int = 2, streams: Int = 100, store: String? = nil, name: String? = nil, appExtra: String = "",
             arguments: [String] = [], environment: [String: String?] = [:]) throws {
            let tokenFile = writeFile(scenario.directory, "admin.token", "test-admin-token-0123456789abcdef\n")
            chmod(tokenFile, 0o600)
            chmod(scenario.running.certificates.providerKey, 0o600)
            let file = name.map { $0 + ".json" } ?? (store == nil ? "sokuho.json" : "sokuho-\(store!.split(separator: "/").last!).json")
            let config = writeFile(scenario.directory, file, """
                {"apps":[{"bundleID":"\(testBundle)","teamID":"\(SimulatorCertificates.teamID)","keyID":"\(keyID)",
                  "keyFile":"\(scenario.running.certificates.providerKey)","environment":"production",
                  "host":"127.0.0.1:\(scenario.running.port)","manageHost":"127.0.0.1:\(scenario.running.managePort)",
                  "caFile":"\(scenario.running.certificates.ca)","connections":\(connections),"streams":\(streams)\(appExtra)}],
                 "listen":["127.0.0.1:0"],"storePath":"\(store ?? scenario.store)","adminTokenFile":"\(tokenFile)","keepaliveSeconds":10,"statusPage":\(statusPage)\(extra)}
                """)
            child = ChildProcess(SimulatorProcessTests.binary, ["serve", "--config", config] + arguments, environment: environment)
            let line = try #require(child.readLine(timeout: 20), "the daemon printed nothing: \(child.stderr)")
            let parsed = try JSONParser.parse(line)
            startLine = parsed
            let listen = try #require(parsed["listen"]?.arrayValue?.first?.stringValue, "\(line)")
            port = try #require(Int(listen.split(separator: ":").last ?? ""))
        }

        /// curl against the daemon: status and body.
        func curl(_ method: String, _ path: String, body: String? = nil, admin: Bool = true, headers: [String] = []) -> (status: Int, body: String) {
            let answer = exchange(method, path, body: body, admin: admin, headers: headers)
            return (answer.status, answer.body)
        }

        /// One request's answer with its headers (names lowercased, values in order), for the
        /// tests that check headers too (`Location`, `Retry-After`, `Content-Type`).
        struct Exchange {
            var status: Int
            var headers: [String: [String]]
            var body: String

            func header(_ name: String) -> String? { headers[name.lowercased()]?.first }
        }

        /// Splits curl's output from the `-w` format of `exchange`: the body, the marker line, the
        /// headers as curl's `%{header_json}` (an object of arrays), the status on the last line.
        private static let headerMarker = "\n--sokuho-response-headers--\n"

        /// curl against the daemon: status, headers and body. `body` starting with "@" names a file
        /// (curl's `--data-binary @FILE`), for bodies too large for an argument.
        func exchange(_ method: String, _ path: String, body: String? = nil, admin: Bool = true, headers: [String] = []) -> Exchange {
            var arguments = ["-sS", "-o", "-", "-w", Self.headerMarker + "%{header_json}\n%{http_code}", "-X", method, "--max-time", "20"]
            if admin { arguments += ["-H", "Authorization: Bearer \(token)"] }
            for header in headers { arguments += ["-H", header] }
            if let body { arguments += ["-H", "Content-Type: application/json", "--data-binary", body] }
            let run = ChildProcess.run("curl", arguments + ["http://127.0.0.1:\(port)\(path)"])
            guard let marker = run.out.ranges(of: Self.headerMarker).last else {
                return Exchange(status: 0, headers: [:], body: run.out + run.err)
            }
            // After the marker: the headers' JSON, then the status on a line of its own
            // (`readRest` ends every line with a newline).
            var rest = run.out[marker.upperBound...].split(separator: "\n", omittingEmptySubsequences: false)
            while rest.last == "" { rest.removeLast() }
            let status = Int(rest.last ?? "") ?? 0
            var parsed: [String: [String]] = [:]
            if let json = try? JSONParser.parse(rest.dropLast().joined(separator: "\n")), let members = json.objectMembers {
                for member in members { parsed[member.key.lowercased()] = member.value.arrayValue?.compactMap(\.stringValue) ?? [] }
            }
            return Exchange(status: status, headers: parsed, body: String(run.out[..<marker.lowerBound]))
        }

        /// POSTs each body to `path` from one curl process (see `requestMany`), without the admin token.
        func postMany(_ path: String, _ bodies: [String], in directory: String) -> [Substring] {
            requestMany(bodies.map { ("POST", path, $0) }, admin: false, in: directory)
        }

        /// Sends each request from one curl process (a process per request would take most of a
        /// minute for a thousand): a config file with one transfer per request, separated by
        /// `next`, sent one after another on one kept-alive connection (curl 7.88's `--parallel`
        /// fails some transfers with "Failed initialization"). The statuses, in order.
        func requestMany(_ requests: [(method: String, path: String, body: String?)], admin: Bool = true, in directory: String) -> [Substring] {
            let transfers = requests.map { request in
                var transfer = """
                    url = "http://127.0.0.1:\(port)\(request.path)"
                    request = "\(request.method)"
                    output = "/dev/null"
                    write-out = "%{http_code}\\n"

                    """
                if admin { transfer += "header = \"Authorization: Bearer \(token)\"\n" }
                if let body = request.body {
                    transfer += "header = \"Content-Type: application/json\"\ndata-binary = \"\(body.replacing("\"", with: "\\\""))\"\n"
                }
                return transfer
            }
            // `next` between transfers only: one after the last is a transfer without a URL.
            let config = transfers.joined(separator: "next\n")
            let file = writeFile(directory, "requests.curl", config)
            let run = ChildProcess.run("curl", ["-sS", "-K", file])
            if !run.err.isEmpty { print("curl: \(run.err.prefix(2000))") }
            return run.out.split(separator: "\n")
        }

        /// The value of the first `/metrics` sample named `sample`: a whole sample
        /// (`sokuho_cluster_shards_total{node="a",outcome="done"}`), or a family name, which also
        /// matches its first labelled sample.
        func metric(_ sample: String) -> Int? {
            let text = curl("GET", "/metrics", admin: false).body
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(sample + " ") || $0.hasPrefix(sample + "{") }) else { return nil }
            return line.split(separator: " ").last.flatMap { Int($0) }
        }

        /// Polls an event until it is no longer queued or running.
        /// The event's record once it has ended. A bound on a hang, not a time being measured: it
        /// used to be 200 polls (about 10 s), which a queue of events on a loaded machine outlasted.
        func waitForEvent(_ path: String) throws -> JSONValue {
            let started = MonotonicInstant.now()
            while MonotonicInstant.now() - started < .seconds(120) {
                let answer = curl("GET", path)
                if answer.status == 200, let json = try? JSONParser.parse(answer.body),
                   let state = json["state"]?.stringValue, state != "queued" && state != "running" {
                    return json
                }
                usleep(50_000)
            }
            throw TestFailure("\(path) did not end in 120 s")
        }

        /// SIGTERM, then its exit status. Whatever the test did to it, a daemon never aborts (a
        /// crash while Redis was cut showed only as requests unanswered: issue 37).
        func stop() -> Int32 {
            kill(child.pid, SIGTERM)
            let status = child.wait()
            #expect(!child.stderr.contains("Fatal error"), "the daemon aborted: \(child.stderr.suffix(4_000))")
            return status
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
        // Two warm connections, plus the credential check's one to the channel host at start.
        for _ in 0..<100 where ready.body.contains(#""credentialCheck":null"#) { usleep(50_000); ready = daemon.curl("GET", "/readyz", admin: false) }
        #expect(ready.body.contains(#""credentialCheck":{"ok":true"#), "\(ready.body)")
        #expect(scenario.running.counters.connections == 3)

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
        #expect(scenario.running.counters.connections == 3)

        let metrics = daemon.curl("GET", "/metrics", admin: false)
        #expect(metrics.body.contains(#"sokuho_pushes_total{app="com.example.eew/production",kind="start",outcome="delivered"} \#(eligible)"#),
                "\(metrics.body)")
        #expect(metrics.body.contains(#"sokuho_connections_up{app="com.example.eew/production"} 2"#))
        // The standard process metrics (issue 24), with values that can be true of this daemon.
        let openFDs = daemon.metric("process_open_fds") ?? -1, maxFDs = daemon.metric("process_max_fds") ?? -1
        #expect(openFDs > 3 && openFDs < maxFDs, "open \(openFDs), max \(maxFDs)")
        #expect((daemon.metric("process_resident_memory_bytes") ?? 0) > 1_000_000)
        let started = metrics.body.split(separator: "\n").first { $0.hasPrefix("process_start_time_seconds ") }.flatMap { Double($0.split(separator: " ")[1]) } ?? 0
        let wallNow = Double(time(nil))
        #expect(started > wallNow - 600 && started <= wallNow + 1, "started \(started), now \(wallNow)")
        #expect(metrics.body.contains("\nprocess_cpu_seconds_total "), "\(metrics.body)")
        #expect(metrics.body.contains("\nsokuho_build_info{version=\"\(SokuhoVersion.current)\"} 1\n"), "\(metrics.body)")
        // Prometheus' own linter reads the exposition as a scraper would (Debian's promtool,
        // installed by Toolchain/setup --for-tests): names, types, help texts, label syntax.
        let exposition = writeFile(temporaryDirectory("sokuho-metrics"), "metrics.txt", metrics.body)
        let lint = ChildProcess.run("/usr/bin/promtool", ["check", "metrics"], stdin: exposition)
        #expect(lint.status == 0, "promtool check metrics: \(lint.out)\(lint.err)")
        // The shipped Grafana dashboard names only metrics the daemon exposes (the alert rules are
        // promtool's: Packaging/test; some name a cluster's, which a node alone does not expose).
        let families = Set(metrics.body.split(separator: "\n").compactMap { line in
            line.hasPrefix("# TYPE ") ? line.split(separator: " ")[2] : nil
        }.map(String.init))
        for file in ["grafana/sokuho-dashboard.json"] {
            let text = String(decoding: readFile(Self.packaging + file), as: UTF8.self)
            let named = Set(text.matches(of: /(sokuho|process)_[a-z_]+/).map { match in
                String(match.output.0).replacing(/_(bucket|sum|count)$/, with: "")
            })
            #expect(!named.isEmpty && named.subtracting(families).isEmpty, "\(file) names what /metrics lacks: \(named.subtracting(families).sorted())")
        }
        // The same event again: already sent, nothing more on the wire.
        let again = daemon.curl("POST", "/v1/events", body: event)
        #expect(again.status == 200 && again.body.contains(#""alreadySent":true"#), "\(again.body)")
        #expect(daemon.stop() == 0)

        daemon = try Daemon(scenario)
        let after = daemon.curl("GET", url)
        #expect(after.status == 200)
        #expect(try JSONParser.parse(after.body)["report"]?["delivered"]?.int64Value == Int64(eligible))
        // The list and the status page still show it after the restart (issue 24), as it ended.
        let listed = daemon.curl("GET", "/v1/events")
        #expect(listed.status == 200 && listed.body.contains(#""key":"eew-serve""#) && listed.body.contains(#""state":"done""#), "\(listed.body)")
        #expect(daemon.curl("GET", "/", admin: false).body.contains("eew-serve"))
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
        // Which build and when (issue 24); each event's accepted time, unknown and failed counts.
        #expect(page.body.contains("sokuho \(SokuhoVersion.current) · rendered 20"), "\(page.body)")
        #expect(page.body.contains("<td class=\"n unknown\">0</td><td class=\"n failed\">0</td>"), "\(page.body)")
        #expect(page.body.contains("<td class=\"accepted\">20"), "\(page.body)")
        // No app has an Android side: no Android column (it would only say 0 / 0).
        #expect(!page.body.contains("Android delivered") && !page.body.contains("class=\"n android\""), "\(page.body)")
        #expect(!page.body.contains("http-equiv=\"refresh\""))
        #expect(daemon.curl("GET", "/?refresh=10", admin: false).body.contains("<meta http-equiv=\"refresh\" content=\"10\">"))
        #expect(!daemon.curl("GET", "/?refresh=0", admin: false).body.contains("http-equiv"), "outside 5…3600 s: no reload")

        // A profile of its own in the scenario's directory: nothing written to $HOME, no state
        // shared with another run.
        // No browser is a failure naming the fix, never a skipped pass.
        let found = ChildProcess.run("sh", ["-c", "command -v chromium"])
        try #require(found.status == 0, "no chromium on PATH: run Toolchain/setup --for-tests (Debian's chromium package)")
        let browser = ["--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(scenario.directory)/chromium"]
        // Chromium on a box busy with the other suites has once exited 0 having printed nothing:
        // asked again (at most three times) before the page is judged.
        var dom = ChildProcess.run("chromium", browser + ["--dump-dom", "http://127.0.0.1:\(daemon.port)/"])
        for _ in 0..<2 where dom.status == 0 && dom.out.isEmpty {
            dom = ChildProcess.run("chromium", browser + ["--dump-dom", "http://127.0.0.1:\(daemon.port)/"])
        }
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

    /// A registration body for the app of the scenario.
    /// The repository's Packaging/ directory (the dashboard and alert rules the package ships).
    static let packaging = "/" + #filePath.split(separator: "/").dropLast(3).joined(separator: "/") + "/Packaging/"

    static func registration(_ id: String?, pushToStart: String? = nil, device: String? = nil, topic: String = "region:0",
                             minLevel: Int = 0, extra: String = "") -> String {
        var members = [#""app":"\#(testBundle)""#, #""environment":"production""#]
        if let id { members.append(#""installationId":"\#(id)""#) }
        if let pushToStart { members.append(#""pushToStartToken":"\#(pushToStart)""#) }
        if let device { members.append(#""deviceToken":"\#(device)""#) }
        members.append(#""topics":[{"name":"\#(topic)","minLevel":\#(minLevel)}]"#)
        return "{" + members.joined(separator: ",") + extra + "}"
    }

    @Test func phonesRegisterOverTheAPIAndAStartReachesEveryEligibleOne() throws {
        let scenario = try FanoutScenario()
        // A thousand phones from one address: more than the default rate limit lets through.
        let daemon = try Daemon(scenario, extra: #","rateLimit":{"perSecond":100000,"burst":100000}"#)
        defer { _ = daemon.stop() }
        let count = 1_000
        let bodies = (0..<count).map { number in
            Self.registration("phone-\(number)", pushToStart: FanoutScenario.token(number), minLevel: number % 4,
                              extra: number % 2 == 0 ? #","broadcast":true"# : "")
        }
        let statuses = daemon.postMany("/v1/installations", bodies, in: scenario.directory)
        #expect(statuses.count == count)
        #expect(statuses.allSatisfy { $0 == "201" }, "\(Set(statuses))")

        // One more phone, whose secret the test keeps.
        let created = daemon.curl("POST", "/v1/installations", body: Self.registration(nil, pushToStart: FanoutScenario.token(5_000)), admin: false)
        #expect(created.status == 201, "\(created.body)")
        let json = try JSONParser.parse(created.body)
        let id = try #require(json["installationId"]?.stringValue)
        let secret = try #require(json["secret"]?.stringValue)
        #expect(Base64URL.decode(secret)?.count == 32)
        // Registering a known id again needs the secret (PUT): else anyone could take it over.
        #expect(daemon.curl("POST", "/v1/installations", body: Self.registration(id, pushToStart: FanoutScenario.token(5_001)), admin: false).status == 409)
        // A wrong or missing secret changes nothing: the phone keeps its topic and token.
        let moved = Self.registration(nil, pushToStart: FanoutScenario.token(5_002), topic: "region:9")
        let wrong = Base64URL.encode([UInt8](repeating: 7, count: 32))
        #expect(daemon.curl("PUT", "/v1/installations/\(id)", body: moved, admin: false).status == 401)
        let forbidden = daemon.curl("PUT", "/v1/installations/\(id)", body: moved, admin: false, headers: ["Authorization: Installation \(wrong)"])
        #expect(forbidden.status == 403, "\(forbidden.body)")
        #expect(try JSONParser.parse(forbidden.body)["error"]?["code"]?.stringValue == "forbidden")
        #expect(daemon.curl("DELETE", "/v1/installations/\(id)", admin: false, headers: ["Authorization: Installation \(wrong)"]).status == 403)
        // The admin token is no installation secret.
        #expect(daemon.curl("DELETE", "/v1/installations/\(id)", admin: false, headers: ["Authorization: Installation \(daemon.token)"]).status == 403)
        let activity = #"{"eventKey":"eew-reg","activityId":"act-1","token":"\#(FanoutScenario.token(6_000))","topic":"region:0"}"#
        let started = daemon.curl("POST", "/v1/installations/\(id)/activities", body: activity, admin: false, headers: ["Authorization: Installation \(secret)"])
        #expect(started.status == 201, "\(started.body)")

        let eligible = Set((0..<count).filter { $0 % 4 <= 2 }.map { FanoutScenario.token($0) } + [FanoutScenario.token(5_000)])
        let accepted = daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-reg", groups: [("region:0", 2, "registered")], channel: "null"))
        #expect(accepted.status == 202, "\(accepted.body)")
        let url = try #require(try JSONParser.parse(accepted.body)["url"]?.stringValue)
        let finished = try daemon.waitForEvent(url)
        #expect(finished["report"]?["delivered"]?.int64Value == Int64(eligible.count), "\(finished.jsonText)")
        let reached = Set(scenario.devicePushes().keys)
        #expect(reached == eligible, "missing \(eligible.subtracting(reached).count), unexpected \(reached.subtracting(eligible).count)")

        // The activity the phone recorded gets the event's update.
        let update = daemon.curl("POST", "/v1/events", body: followEvent(key: "eew-reg", serial: 2, kind: "update", groups: [("region:0", 2, "later")], channel: "null"))
        #expect(update.status == 202, "\(update.body)")
        _ = try daemon.waitForEvent(try #require(try JSONParser.parse(update.body)["url"]?.stringValue))
        #expect(scenario.devicePushes()[FanoutScenario.token(6_000)]?.count == 1)

        // With the secret: the change is taken (the new token in the new region gets the next
        // start), then the installation is removed (and gets nothing).
        #expect(daemon.curl("PUT", "/v1/installations/\(id)", body: moved, admin: false, headers: ["Authorization: Installation \(secret)"]).status == 200)
        let movedEvent = daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-moved", groups: [("region:9", 2, "moved")], channel: "null"))
        #expect(try daemon.waitForEvent(try #require(try JSONParser.parse(movedEvent.body)["url"]?.stringValue))["report"]?["delivered"]?.int64Value == 1)
        #expect(scenario.devicePushes()[FanoutScenario.token(5_002)]?.count == 1)
        #expect(daemon.curl("DELETE", "/v1/installations/\(id)", admin: false, headers: ["Authorization: Installation \(secret)"]).status == 204)
        let goneEvent = daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-gone", groups: [("region:9", 2, "gone")], channel: "null"))
        #expect(try daemon.waitForEvent(try #require(try JSONParser.parse(goneEvent.body)["url"]?.stringValue))["report"]?["targets"]?.int64Value == 0)
        #expect(daemon.curl("PUT", "/v1/installations/\(id)", body: moved, admin: false, headers: ["Authorization: Installation \(secret)"]).status == 404)
    }

    /// Issue 35: content the phones cannot decode is refused at the POST, naming where — it was
    /// accepted (202) and then failed silently on every phone.
    @Test func anEventWhoseContentThePhonesCannotDecodeIs400AtThePost() throws {
        let scenario = try FanoutScenario()
        let daemon = try Daemon(scenario)
        defer { _ = daemon.stop() }
        let good = startEvent(key: "eew-decode", groups: [("region:0", 1, "x")], channel: "null")
        for (content, field) in [(#""text":"x","n":1e999"#, "groups[0] (region:0): aps.content-state.n: is 1e999"),
                                 (#""text":"x","text":"y""#, #"groups[0] (region:0): aps.content-state: has the key \"text\" twice"#)] {
            let body = good.replacing(#""text":"x""#, with: content)
            let answer = daemon.curl("POST", "/v1/events", body: body)
            #expect(answer.status == 400 && answer.body.contains("invalid_event") && answer.body.contains(field), "\(answer.body)")
        }
        #expect(daemon.curl("POST", "/v1/events", body: good).status == 202)
    }

    @Test func aBadRegistrationBodyNamesTheField() throws {
        let scenario = try FanoutScenario()
        let daemon = try Daemon(scenario)
        defer { _ = daemon.stop() }
        let token = FanoutScenario.token(1)
        let cases: [(String, String)] = [
            (Self.registration("a", pushToStart: "xyz"), "pushToStartToken"),
            (Self.registration("a", device: "abcd"), "deviceToken"),
            (Self.registration("a", pushToStart: token, minLevel: 300), "topics[0].minLevel"),
            (Self.registration("a", pushToStart: token, extra: #","topic":"region:0""#), "topic"),
            (Self.registration("a", pushToStart: token, extra: #","broadcast":"yes""#), "broadcast"),
            (Self.registration("a"), "pushToStartToken"),
            (#"{"environment":"production","pushToStartToken":"\#(token)"}"#, "app"),
            ("not json", "body"),
        ]
        for (body, field) in cases {
            let answer = daemon.curl("POST", "/v1/installations", body: body, admin: false)
            #expect(answer.status == 400, "\(body): \(answer.body)")
            let error = try JSONParser.parse(answer.body)["error"]
            #expect(error?["code"]?.stringValue == "invalid_body")
            #expect(error?["message"]?.stringValue?.hasPrefix(field + ":") == true, "\(field): \(answer.body)")
        }
        let unknownApp = daemon.curl("POST", "/v1/installations", body: Self.registration("a", pushToStart: token).replacing(testBundle, with: "com.example.other"), admin: false)
        #expect(unknownApp.status == 422 && unknownApp.body.contains("unknown_app"), "\(unknownApp.body)")
        #expect(daemon.curl("PUT", "/v1/installations/nobody", body: Self.registration(nil, pushToStart: token), admin: false,
                            headers: ["Authorization: Installation AAAA"]).status == 404)
        // The default rate limit (20/s, burst 40) covers the app routes too.
        let statuses = daemon.postMany("/v1/installations", Array(repeating: "{}", count: 60), in: scenario.directory)
        #expect(statuses.contains("429"), "\(statuses)")
    }

    /// Channels an operator keeps outside any event, managed over the API: a created channel is
    /// listed until deleted, a repeated delete still succeeds, and a bad query or body names its field.
    @Test func backendsCreateListAndDeleteChannelsThroughTheAPI() throws {
        let scenario = try FanoutScenario()
        let daemon = try Daemon(scenario)
        defer { _ = daemon.stop() }
        let query = "?app=\(testBundle)&environment=production"
        let created = daemon.curl("POST", "/v1/channels", body: #"{"app":"\#(testBundle)","environment":"production","storagePolicy":1}"#)
        #expect(created.status == 201, "\(created.body)")
        let channel = try #require(try JSONParser.parse(created.body)["channel"]?.stringValue)
        #expect(try JSONParser.parse(created.body)["storagePolicy"]?.int64Value == 1)
        let listed = daemon.curl("GET", "/v1/channels" + query)
        #expect(listed.status == 200, "\(listed.body)")
        #expect(try JSONParser.parse(listed.body)["channels"]?.arrayValue?.compactMap(\.stringValue).contains(channel) == true, "\(listed.body)")

        let deleted = daemon.curl("DELETE", "/v1/channels/\(pathSegment(channel))" + query)
        #expect(deleted.status == 200, "\(deleted.body)")
        #expect(try JSONParser.parse(deleted.body)["alreadyDeleted"]?.boolValue == false)
        // Deleting it again (a retry after a lost answer) succeeds: the channel is gone either way.
        let again = daemon.curl("DELETE", "/v1/channels/\(pathSegment(channel))" + query)
        #expect(again.status == 200, "\(again.body)")
        #expect(try JSONParser.parse(again.body)["alreadyDeleted"]?.boolValue == true)
        let after = daemon.curl("GET", "/v1/channels" + query)
        #expect(try JSONParser.parse(after.body)["channels"]?.arrayValue?.compactMap(\.stringValue).contains(channel) == false, "\(after.body)")

        #expect(daemon.curl("GET", "/v1/channels" + query, admin: false).status == 401)
        let noQuery = daemon.curl("GET", "/v1/channels")
        #expect(noQuery.status == 400 && noQuery.body.contains("invalid_query") && noQuery.body.contains("app"), "\(noQuery.body)")
        let otherApp = daemon.curl("GET", "/v1/channels?app=com.example.other&environment=production")
        #expect(otherApp.status == 422 && otherApp.body.contains("unknown_app"), "\(otherApp.body)")
        let badPolicy = daemon.curl("POST", "/v1/channels", body: #"{"app":"\#(testBundle)","environment":"production","storagePolicy":7}"#)
        #expect(badPolicy.status == 400 && badPolicy.body.contains("storagePolicy:"), "\(badPolicy.body)")
        let typo = daemon.curl("POST", "/v1/channels", body: #"{"app":"\#(testBundle)","environment":"production","storage":1}"#)
        #expect(typo.status == 400 && typo.body.contains("storage:"), "\(typo.body)")
    }

    /// The credential check at start: a working key shows as passed on /readyz and /metrics; a key
    /// APNs does not know (here: a key id the simulator does not trust) shows as failed with APNs'
    /// reason, on /readyz, /metrics and the status page, before any event needs it.
    @Test func theCredentialCheckTellsAWorkingKeyFromARefusedOne() throws {
        for (keyID, passes) in [(SimulatorCertificates.keyID, true), ("REVOKED001", false)] {
            let scenario = try FanoutScenario()
            let daemon = try Daemon(scenario, keyID: keyID)
            defer { _ = daemon.stop() }
            var check: JSONValue?
            for _ in 0..<200 {
                let ready = daemon.curl("GET", "/readyz", admin: false)
                if let found = try? JSONParser.parse(ready.body)["apps"]?.arrayValue?.first?["credentialCheck"], found["ok"] != nil { check = found; break }
                usleep(50_000)
            }
            let result = try #require(check, "no credential check result on /readyz")
            #expect(result["ok"]?.boolValue == passes, "\(result.jsonText)")
            #expect(result["checkedAt"]?.int64Value ?? 0 > 1_700_000_000)
            let metrics = daemon.curl("GET", "/metrics", admin: false).body
            #expect(metrics.contains(#"sokuho_credential_check_ok{app="com.example.eew/production"} \#(passes ? 1 : 0)"#), "\(metrics)")
            let page = daemon.curl("GET", "/", admin: false).body
            if passes {
                #expect(result["message"] == .null)
                #expect(page.contains("<span class=\"ok\">ok</span> (checked "), "\(page)")
            } else {
                #expect(result["message"]?.stringValue?.contains("InvalidProviderToken") == true, "\(result.jsonText)")
                #expect(page.contains("failed:") && page.contains("InvalidProviderToken"), "\(page)")
            }
        }
    }

    /// Two phones (or one retrying) registering the same new id at once: exactly one gets the
    /// installation and its secret, the others a 409, and the secret handed out is the one that works.
    @Test func concurrentFirstRegistrationsOfOneIDHandOutOneWorkingSecret() throws {
        let scenario = try FanoutScenario()
        let daemon = try Daemon(scenario, extra: #","rateLimit":{"perSecond":100000,"burst":100000}"#)
        defer { _ = daemon.stop() }
        let body = Self.registration("same-phone", pushToStart: FanoutScenario.token(1))
        let file = writeFile(scenario.directory, "body.json", body)
        for round in 0..<5 {
            let id = "same-phone-\(round)"
            _ = writeFile(scenario.directory, "body.json", body.replacing("same-phone", with: id))
            // Eight curl processes at once, each writing its body and status to files of its own
            // (one shared pipe would interleave their writes).
            let script = (0..<8).map { index in
                "curl -sS -o \(scenario.directory)/body\(index) -w '%{http_code}' -H 'Content-Type: application/json' "
                    + "--data-binary @\(file) http://127.0.0.1:\(daemon.port)/v1/installations > \(scenario.directory)/status\(index) &"
            }.joined(separator: "\n") + "\nwait\n"
            let run = ChildProcess.run("sh", ["-c", script])
            let answers = (0..<8).map { index in
                (status: String(decoding: readFile(scenario.directory + "/status\(index)"), as: UTF8.self),
                 body: String(decoding: readFile(scenario.directory + "/body\(index)"), as: UTF8.self))
            }
            #expect(run.status == 0, "\(run.err)")
            let created = answers.filter { $0.status == "201" }
            #expect(created.count == 1, "\(answers)")
            #expect(answers.filter { $0.status == "409" }.count == 7, "\(answers)")
            let json = try JSONParser.parse(try #require(created.first).body)
            let secret = try #require(json["secret"]?.stringValue)
            let changed = daemon.curl("PUT", "/v1/installations/\(id)", body: Self.registration(nil, pushToStart: FanoutScenario.token(2)), admin: false,
                                      headers: ["Authorization: Installation \(secret)"])
            #expect(changed.status == 200, "\(changed.body)")
        }
    }

    /// SIGHUP reloads the configuration file: an app whose key and endpoints are unchanged keeps
    /// its warm connections (the simulator sees no new one), a new app gets its own, an app whose
    /// key changed is replaced and checked at once, and a file that does not load changes nothing.
    @Test func aReloadKeepsValidWarmConnectionsAndReconnectsOnlyWhatChanged() throws {
        let scenario = try FanoutScenario()
        let phones = (0..<50).map { FanoutScenario.Phone(id: "p\($0)", token: FanoutScenario.token($0), topics: [("region:0", 1)]) }
        try scenario.register(phones)
        let daemon = try Daemon(scenario)
        defer { _ = daemon.stop() }
        let path = scenario.directory + "/sokuho.json"
        let original = String(decoding: readFile(path), as: UTF8.self)
        /// The apps of /readyz once every one has a credential check, by name.
        func settledApps(_ count: Int) throws -> [String: JSONValue] {
            for _ in 0..<200 {
                let body = daemon.curl("GET", "/readyz", admin: false).body
                // Settled: each app checked, and its two connections up unless its check failed.
                if let apps = try? JSONParser.parse(body)["apps"]?.arrayValue, apps.count == count,
                   apps.allSatisfy({ $0["credentialCheck"] != .null && $0["connectionsUp"]?.int64Value == 2 || $0["credentialCheck"]?["ok"]?.boolValue == false }) {
                    return Dictionary(uniqueKeysWithValues: apps.map { ($0["app"]?.stringValue ?? "", $0) })
                }
                usleep(50_000)
            }
            throw TestFailure("/readyz did not settle on \(count) apps: \(daemon.curl("GET", "/readyz", admin: false).body)")
        }
        func reload(_ text: String, expecting line: String) throws {
            _ = writeFile(scenario.directory, "sokuho.json", text)
            kill(daemon.child.pid, SIGHUP)
            for _ in 0..<200 where !daemon.child.stderr.contains(line) { usleep(25_000) }
            #expect(daemon.child.stderr.contains(line), "\(daemon.child.stderr)")
        }
        _ = try settledApps(1)
        // Two warm connections and the credential check's one (the check runs beside the start:
        // /readyz can settle before its connection is made).
        for _ in 0..<200 where scenario.running.counters.connections < 3 { usleep(25_000) }
        #expect(scenario.running.counters.connections == 3)

        // Unchanged apps, another rate limit and start budget: nothing reconnects; events still go out.
        try reload(original.replacing(#""statusPage":true"#, with: #""statusPage":true,"startLimit":3,"rateLimit":{"perSecond":50,"burst":50}"#),
                   expecting: "SIGHUP: rateLimit: changed")
        #expect(daemon.child.stderr.contains("com.example.eew/production: kept"))
        let first = daemon.curl("POST", "/v1/events", body: startEvent(key: "eew-reload", groups: [("region:0", 1, "after reload")], channel: "null"))
        #expect(try daemon.waitForEvent(try #require(try JSONParser.parse(first.body)["url"]?.stringValue))["report"]?["delivered"]?.int64Value == 50)
        #expect(scenario.running.counters.connections == 3)

        // A second app: its own two connections and check; the first app's stay as they were.
        let appStart = try #require(original.firstRange(of: #""apps":["#)).upperBound
        let appEnd = try #require(original[appStart...].firstRange(of: "}]")).lowerBound
        let eew = String(original[appStart...appEnd])
        let train = eew.replacing(testBundle, with: "com.example.train")
        try reload(original.replacing(eew, with: eew + "," + train), expecting: "com.example.train/production: added")
        let two = try settledApps(2)
        #expect(two["com.example.train/production"]?["credentialCheck"]?["ok"]?.boolValue == true)
        for _ in 0..<100 where scenario.running.counters.connections < 6 { usleep(50_000) }
        #expect(scenario.running.counters.connections == 6)

        // The first app's key id changes (a rotated key the simulator does not trust): only it is
        // replaced, and its check fails at once instead of at the next hourly round.
        let rotated = eew.replacing(#""keyID":"\#(SimulatorCertificates.keyID)""#, with: #""keyID":"ROTATED001""#)
        try reload(original.replacing(eew, with: rotated + "," + train), expecting: "com.example.eew/production: replaced")
        #expect(daemon.child.stderr.contains("com.example.train/production: kept"))
        var failed: JSONValue?
        for _ in 0..<200 {
            let apps = try settledApps(2)
            if apps["com.example.eew/production"]?["credentialCheck"]?["ok"]?.boolValue == false { failed = apps["com.example.eew/production"]; break }
            usleep(50_000)
        }
        #expect(failed?["credentialCheck"]?["message"]?.stringValue?.contains("InvalidProviderToken") == true, "\(failed?.jsonText ?? "none")")
        // The log says it once, as an error naming the app (issue 24): a turn, not every check.
        for _ in 0..<200 where !daemon.child.stderr.contains("error credential check failing") { usleep(25_000) }
        let turned = daemon.child.stderr.split(separator: "\n").filter { $0.contains(" error credential check failing app=com.example.eew/production reason=") }
        #expect(turned.count == 1, "\(daemon.child.stderr)")

        // A file that does not load: nothing changes, the daemon keeps serving.
        try reload("{ not json", expecting: "nothing changed")
        #expect(daemon.child.stderr.contains(" error sokuho serve: SIGHUP: "), "a reload that failed is an error line: \(daemon.child.stderr)")
        #expect(try settledApps(2).count == 2)
        #expect(daemon.curl("GET", "/healthz", admin: false).status == 200)
    }

    /// A key may hold any character but NUL: the URL the daemon answers with still leads back to
    /// the event (it is percent-encoded), so a backend can poll what it was given.
    @Test func anEventsURLLeadsBackToItWhateverItsKey() throws {
        let scenario = try FanoutScenario()
        let daemon = try Daemon(scenario)
        defer { _ = daemon.stop() }
        let key = "eew 2026?#1 100%/東京"
        let accepted = daemon.curl("POST", "/v1/events", body: startEvent(key: key, groups: [("region:0", 1, "odd key")], channel: "null"))
        #expect(accepted.status == 202, "\(accepted.body)")
        let url = try #require(try JSONParser.parse(accepted.body)["url"]?.stringValue)
        #expect(url == "/v1/events/eew%202026%3F%231%20100%25/%E6%9D%B1%E4%BA%AC/1")
        let finished = try daemon.waitForEvent(url)
        #expect(finished["key"]?.stringValue == key, "\(finished.jsonText)")
    }

    /// What phones registered over the API survives a restart: every installation is still there,
    /// and a secret handed out before the restart still works after it.
    @Test func aRestartKeepsEveryRegistrationAndItsSecret() throws {
        let scenario = try FanoutScenario()
        var daemon = try Daemon(scenario, extra: #","rateLimit":{"perSecond":100000,"burst":100000}"#)
        let bodies = (0..<50).map { Self.registration("kept-\($0)", pushToStart: FanoutScenario.token($0)) }
        #expect(daemon.postMany("/v1/installations", bodies, in: scenario.directory).allSatisfy { $0 == "201" })
        let created = daemon.curl("POST", "/v1/installations", body: Self.registration(nil, pushToStart: FanoutScenario.token(99)), admin: false)
        let json = try JSONParser.parse(created.body)
        let id = try #require(json["installationId"]?.stringValue), secret = try #require(json["secret"]?.stringValue)
        #expect(daemon.stop() == 0)

        daemon = try Daemon(scenario)
        defer { _ = daemon.stop() }
        let stats = try JSONParser.parse(daemon.curl("GET", "/v1/tokens/stats").body)
        #expect(stats["installations"]?.int64Value == 51, "\(stats.jsonText)")
        let moved = daemon.curl("PUT", "/v1/installations/\(id)", body: Self.registration(nil, pushToStart: FanoutScenario.token(100)), admin: false,
                                headers: ["Authorization: Installation \(secret)"])
        #expect(moved.status == 200, "\(moved.body)")
    }
}
