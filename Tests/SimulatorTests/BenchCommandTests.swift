#if canImport(Glibc)
import Glibc
#endif
import Crypto
import HTTP2
import IO
import JSONCore
import Simulator
import SokuhoCLI
import Synchronization
import Testing

/// `sokuho bench` as a script sees it: its exit status says whether every push was delivered, and
/// it ends by its deadline whatever the server does.
@Suite(.serialized) struct BenchCommandTests {
    func bench(_ simulator: RunningSimulator, _ extra: [String]) -> CLIRun {
        sokuho(["bench", "--target", "https://127.0.0.1:\(simulator.port)", "--ca-file", simulator.certificates.ca,
                "--key", simulator.certificates.providerKey, "--key-id", SimulatorCertificates.keyID,
                "--team-id", SimulatorCertificates.teamID, "--connections", "2", "--streams", "100", "--json"] + extra)
    }

    func outcomes(_ run: CLIRun) -> [String: Int] {
        guard let report = try? JSONParser.parse(Array(run.line.utf8)), let outcomes = report["outcomes"]?.objectMembers else { return [:] }
        var out: [String: Int] = [:]
        for (key, value) in outcomes { out[key] = value.int64Value.map { Int($0) } }
        return out
    }

    @Test("bench exits 0 when every push was delivered")
    func allDeliveredExitsZero() throws {
        try withSimulator { simulator in
            let run = bench(simulator, ["--pushes", "2000"])
            #expect(run.code == .success, "\(run)")
            #expect(outcomes(run)["delivered"] == 2000, "\(run)")
        }
    }

    @Test("bench --svg writes a chart of the run that an XML parser accepts, and still prints its --json report")
    func svgChartIsWritten() throws {
        let path = temporaryDirectory("sokuho-bench-svg") + "/chart.svg"
        try withSimulator { simulator in
            let run = bench(simulator, ["--pushes", "2000", "--svg", path])
            #expect(run.code == .success, "\(run)")
            #expect(outcomes(run)["delivered"] == 2000, "\(run)")
        }
        let svg = String(decoding: readFile(path), as: UTF8.self)
        #expect(svg.hasPrefix("<?xml") && svg.contains("2000 answered"), "\(svg.prefix(600))")
        #expect(system("python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])' '\(path)'") == 0)
    }

    @Test("bench exits 1 and names the outcomes when some pushes were not delivered")
    func notAllDeliveredExitsOne() throws {
        try withSimulator({ $0.faults = [("BadDeviceToken", 0.05)]; $0.seed = 3 }) { simulator in
            let run = bench(simulator, ["--pushes", "2000"])
            #expect(run.code == .refused, "\(run)")
            #expect(run.err.contains("were not delivered") && run.err.contains("tokenDead"), "\(run)")
        }
    }

    @Test("bench against a server that disappears mid-run ends by its deadline + 5 s, with one outcome per push")
    func aServerThatDisappearsEndsByTheDeadline() throws {
        let simulator = try RunningSimulator { $0.latency = .nanoseconds(20_000_000) }
        let server = simulator.simulator
        let stopper = OSThread.start(name: "stop-simulator") {
            usleep(400_000)
            server.stop()
        }
        let start = MonotonicInstant.now()
        let run = bench(simulator, ["--pushes", "100000", "--deadline", "3"])
        let seconds = (MonotonicInstant.now() - start).seconds
        stopper.join()
        #expect(seconds < 3 + 5, "\(seconds) s")
        #expect(run.code == .refused, "\(run)")
        let counts = outcomes(run)
        #expect(counts.values.reduce(0, +) == 100_000, "\(run)")
        #expect((counts["expired"] ?? 0) + (counts["unknown"] ?? 0) > 0, "\(run)")
    }

    /// `bench serve`: every event reaches every phone on the connections the daemon opened at start
    /// (the idle pool kept them through keep-alive PINGs), and the report has the figures the
    /// README quotes. Times are printed, not asserted: a timed test on a shared machine proves nothing.
    @Test func benchServeDeliversEveryEventOnTheWarmConnectionsAfterIdling() throws {
        let run = sokuho(["bench", "serve", "--phones", "100", "--events", "2", "--keepalive", "1", "--idle", "1.5", "--json"])
        #expect(run.code == .success, "\(run)")
        let report = try JSONParser.parse(Array(run.line.utf8))
        #expect(report["complete"]?.boolValue == true, "\(run)")
        #expect(report["reconnects"]?.int64Value == 0, "\(run)")
        #expect(report["events"]?.int64Value == 2)
        let p99 = try #require(report["firstPushMs"]?["p99"]?.doubleValue, "\(run)")
        #expect(p99 > 0 && p99 <= (report["firstPushMs"]?["max"]?.doubleValue ?? 0))
        print("bench serve: first push p99 \(p99) ms")
    }
}
