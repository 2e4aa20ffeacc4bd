import JSONCore
import Sender

/// What a bench run came to, for people and for scripts: the printed figures (or --json), a fault
/// run's verdict, and the --svg chart.
extension BenchCommand {
    /// A fault run's verdict: the invariants of `FaultPlan`, printed, and the exit status.
    static func judge(_ result: Result, plan: FaultPlan, server: FaultyServer.Counts, deadline: Double,
                      invocation: Invocation) -> ExitCode {
        let counters = result.counters
        let delivered = result.delivered
        let maybe = counters[.unknown] + counters[.expired]
        // Closing connections and joining threads after the deadline takes a moment; more is a hang.
        let checks: [(String, Bool)] = [
            ("one outcome per push (\(counters.finished) of \(result.pushes))", counters.finished == result.pushes),
            ("simulator accepted \(server.accepted) >= delivered \(delivered)", server.accepted >= delivered),
            ("simulator accepted \(server.accepted) <= delivered + unknown + expired \(delivered + maybe)", server.accepted <= delivered + maybe),
            ("no phone pushed twice (\(server.accepted - server.distinct) duplicates)", server.accepted == server.distinct),
            ("ended by the deadline (\(fixed(result.seconds, 2)) s of \(fixed(deadline, 1)) s)", result.seconds <= deadline + 5),
        ]
        report(result, invocation: invocation, faults: (plan.description, server, checks))
        return checks.allSatisfy(\.1) ? .success : .refused
    }

    /// The --svg chart of a run. The series is "answered" because bench counts finished pushes,
    /// whatever their outcome; the subtitle says how many of them were delivered.
    static func chart(_ result: Result, title: String) -> DeliveryChart {
        let subtitle = "\(result.pushes) pushes · \(result.counters.finished) answered · \(result.delivered) delivered · "
            + "\(fixed(result.seconds, 2)) s · \(Int(result.pushesPerSecond.rounded())) pushes/s"
        return DeliveryChart(title: title, subtitle: subtitle, seriesLabel: "answered", overTime: result.overTime, latency: result.latencies)
    }

    static func report(_ result: Result, invocation: Invocation, faults: (spec: String, server: FaultyServer.Counts, checks: [(String, Bool)])? = nil) {
        let rate = result.pushesPerSecond
        let cpuPer100k = result.cpuSeconds * 100_000 / Double(result.pushes)
        if invocation.flag("--json") {
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("pushes"); writer.int(result.pushes)
            writer.key("seconds"); writer.double(round3(result.seconds))
            writer.key("pushesPerSecond"); writer.double(result.seconds > 0 ? rate.rounded() : 0)
            writer.key("cpuSecondsPer100k"); writer.double(round3(cpuPer100k))
            writer.key("p50Ms"); writer.double(round3(result.p50))
            writer.key("p99Ms"); writer.double(round3(result.p99))
            writer.key("peakRssMB"); writer.double(round3(result.peakRSSMB))
            writer.key("outcomes"); writer.beginObject()
            for outcome in PushOutcome.allCases { writer.key(outcome.description); writer.int(result.counters[outcome]) }
            writer.endObject()
            writer.key("retries"); writer.int(result.counters.retries)
            writer.key("resends"); writer.int(result.counters.refusedResends + result.counters.unknownResends)
            writer.key("connectionsOpened"); writer.int(result.counters.connectionsOpened)
            if let simulator = result.simulatorCPUSeconds {
                writer.key("simulatorCpuSecondsPer100k"); writer.double(round3(simulator * 100_000 / Double(result.pushes)))
            }
            if let faults {
                writer.key("faults"); writer.string(faults.spec)
                writer.key("simulatorAccepted"); writer.int(faults.server.accepted)
                // The answers the slow fault held back: the pushes that may rightly end held.
                writer.key("simulatorHeldBack"); writer.int(faults.server.heldBack)
                writer.key("invariantsHeld"); writer.bool(faults.checks.allSatisfy(\.1))
                writer.key("checks"); writer.beginArray()
                for (text, held) in faults.checks {
                    writer.beginObject(); writer.key("check"); writer.string(text); writer.key("held"); writer.bool(held); writer.endObject()
                }
                writer.endArray()
            }
            writer.endObject()
            invocation.console.print(writer.string)
        } else {
            invocation.console.print("pushes        \(result.pushes) in \(fixed(result.seconds, 2)) s")
            invocation.console.print("throughput    \(Int(rate.rounded())) pushes/s")
            invocation.console.print("cpu           \(fixed(cpuPer100k, 3)) s (user+sys) per 100k pushes"
                + (result.simulatorCPUSeconds.map { "; the simulator used \(fixed($0 * 100_000 / Double(result.pushes), 3)) s" } ?? ""))
            invocation.console.print("latency       p50 \(fixed(result.p50, 2)) ms, p99 \(fixed(result.p99, 2)) ms")
            invocation.console.print("peak rss      \(fixed(result.peakRSSMB, 1)) MB")
            let outcomes = PushOutcome.allCases.filter { result.counters[$0] > 0 }.map { "\($0) \(result.counters[$0])" }
            invocation.console.print("outcomes      \(outcomes.joined(separator: ", "))")
            invocation.console.print("connections   \(result.counters.connectionsOpened) opened, retries \(result.counters.retries), resends \(result.counters.refusedResends + result.counters.unknownResends)")
            for (text, held) in faults?.checks ?? [] { invocation.console.print((held ? "held          " : "VIOLATED      ") + text) }
        }
    }

    static func round3(_ value: Double) -> Double { (value * 1000).rounded() / 1000 }

    static func fixed(_ value: Double, _ digits: Int) -> String {
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = Int((value * scale).rounded())
        let whole = scaled / Int(scale), fraction = abs(scaled % Int(scale))
        var fractionText = String(fraction)
        while fractionText.count < digits { fractionText = "0" + fractionText }
        return digits == 0 ? String(whole) : "\(whole).\(fractionText)"
    }
}
