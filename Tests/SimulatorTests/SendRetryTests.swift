#if canImport(Glibc)
import Glibc
#endif
import IO
import Simulator
import SokuhoCLI
import Testing

/// `send` and `channels` go through the connection pool, so a refusal that asks to try again is
/// retried within `--timeout` the way every fan-out push is.
@Suite struct SendRetryTests {
    let dir = temporaryDirectory()
    var update: [String] { ["send", "--token", deviceToken("b1"), "--payload", writeFile(dir, "update.json", updateBody())] }

    /// Half the pushes are refused with 503 (the seed makes the first attempt one of them, the
    /// retry not): `send` waits out the Retry-After and is delivered, exit 0.
    @Test func a503IsRetriedAfterRetryAfterAndDelivered() throws {
        try withSimulator({ $0.faults = [("ServiceUnavailable", 0.5)]; $0.retryAfterSeconds = 1; $0.seed = 1 }) { sim in
            let started = MonotonicInstant.now()
            let run = sim.run(update + ["--json"])
            let elapsed = MonotonicInstant.now() - started
            #expect(run.code == .success, "\(run)")
            #expect(run.line.hasPrefix("{\"status\":200,"), "\(run)")
            #expect((sim.counters.rejected["ServiceUnavailable"] ?? 0) >= 1, "\(sim.counters.rejected)")
            #expect(sim.counters.accepted == 1)
            #expect(elapsed >= .seconds(1), "Retry-After: 1 was not waited out (\(elapsed))")
        }
    }

    /// Every attempt refused with Retry-After 1: retries at 1 s and 2 s, and the one that would come
    /// at 3 s is past `--timeout 2.5`, so the command ends there with the last refusal (exit 1).
    @Test func theTimeoutBoundsTheRetries() throws {
        try withSimulator({ $0.faults = [("ServiceUnavailable", 1)]; $0.retryAfterSeconds = 1 }) { sim in
            let started = MonotonicInstant.now()
            let run = sim.run(update + ["--timeout", "2.5"])
            let elapsed = MonotonicInstant.now() - started
            #expect(run.code == .refused, "\(run)")
            #expect(run.out.hasPrefix("status 503"), "\(run)")
            #expect(run.err.contains("503 ServiceUnavailable: a temporary refusal"), "\(run)")
            #expect(sim.counters.rejected["ServiceUnavailable"] == 3, "\(sim.counters.rejected)")
            #expect(elapsed < .seconds(3), "\(elapsed)")
        }
    }

    /// A broadcast is judged by the same classifier: a 503 is retried, then delivered.
    @Test func aBroadcastIsRetriedToo() throws {
        try withSimulator({ $0.faults = [("ServiceUnavailable", 0.5)]; $0.retryAfterSeconds = 0; $0.seed = 1 }) { sim in
            let create = sim.run(["channels", "create"])
            #expect(create.code == .success, "\(create)")
            let state = writeFile(dir, "state.json", #"{"intensity":3}"#)
            let run = sim.run(["send", "--channel", create.line, "--event", "update", "--content-state", state])
            #expect(run.code == .success, "\(run)")
            #expect((sim.counters.rejected["ServiceUnavailable"] ?? 0) >= 1, "\(sim.counters.rejected)")
            #expect(sim.counters.accepted == 1)
        }
    }
}
