#if canImport(Glibc)
import Glibc
#endif
import IO
import JSONCore
import Vocabulary

/// `sokuho bench --faults SPEC`: a fault run. The built-in simulator misbehaves as SPEC says while
/// the pool sends, and afterwards the run is judged by invariants, not by how many pushes got
/// through (faults make some fail, rightly):
/// - exactly one outcome per push;
/// - the simulator accepted at least every delivered push, and at most those plus the ones that
///   ended unknown or expired (an answer lost or late: the push may have arrived);
/// - no phone got a push twice (bench pushes never resend an unknown one, so any duplicate is a bug);
/// - the run ended by its deadline (plus the time to close connections).
///
/// SPEC is comma-separated; `random:SEED` draws a mix. Items:
///   latency=MS · REASON=FRACTION (any APNs reason: TooManyRequests=0.01, InternalServerError=0.01,
///   ServiceUnavailable=0.01, ExpiredProviderToken=0.001) · retry-after=SECONDS · goaway=N ·
///   goaway-reason=TEXT (known, unknown or absent) · reset=N · stall=N · slow=FRACTION:MS ·
///   vanish=AT:FOR (the server exits at AT seconds and comes back FOR seconds later on the same
///   ports) · blackhole=AT:FOR (it stops answering anything, SIGSTOP, then resumes) ·
///   badcert=AT:FOR (it comes back with a certificate from another CA: TLS handshakes fail).
struct FaultPlan: CustomStringConvertible {
    enum Disruption {
        case vanish, blackhole, badCertificate
    }

    var simulatorArguments: [String] = []
    /// `latency=MS`: the simulator's `--latency-ms` (bench passes that option itself).
    var latency: Int?
    var disruptions: [(kind: Disruption, at: Double, for: Double)] = []
    var items: [String] = []

    var description: String { items.joined(separator: ",") }

    init(_ spec: String, deadline: Double) throws(CLIError) {
        var text = spec
        if spec.hasPrefix("random:") {
            guard let seed = UInt64(spec.dropFirst("random:".count)) else { throw .data("--faults random:SEED needs a number, not '\(spec)'") }
            text = Self.randomMix(seed: seed, deadline: deadline)
        }
        for item in text.split(separator: ",").map(String.init) {
            guard let equals = item.firstIndex(of: "=") else { throw .data("--faults: '\(item)' is not NAME=VALUE (see 'sokuho bench --help')") }
            let name = String(item[..<equals]), value = String(item[item.index(after: equals)...])
            items.append(item)
            func window() throws(CLIError) -> (Double, Double) {
                let parts = value.split(separator: ":").compactMap { Double($0) }
                guard parts.count == 2, parts[0] >= 0, parts[1] > 0 else { throw .data("--faults \(name) must be AT:FOR in seconds, e.g. \(name)=0.5:1, not '\(value)'") }
                return (parts[0], parts[1])
            }
            func number() throws(CLIError) -> String {
                guard Int(value).map({ $0 > 0 }) == true else { throw .data("--faults \(name) must be a positive whole number, not '\(value)'") }
                return value
            }
            switch name {
            case "latency": latency = Int(try number())
            case "retry-after": simulatorArguments += ["--retry-after", try number()]
            case "goaway": simulatorArguments += ["--goaway-after", try number()]
            case "goaway-reason": simulatorArguments += ["--goaway-reason", value]
            case "reset": simulatorArguments += ["--reset-after", try number()]
            case "stall": simulatorArguments += ["--stall-after", try number()]
            case "slow": simulatorArguments += ["--slow", value.replacing(":", with: "=")]
            case "vanish": let (at, span) = try window(); disruptions.append((.vanish, at, span))
            case "blackhole": let (at, span) = try window(); disruptions.append((.blackhole, at, span))
            case "badcert": let (at, span) = try window(); disruptions.append((.badCertificate, at, span))
            default:
                // An APNs reason with the fraction of pushes that get it.
                guard let fraction = Double(value), (0...1).contains(fraction), name.first?.isUppercase == true else {
                    throw .data("--faults: unknown item '\(item)'; use latency, retry-after, goaway, goaway-reason, reset, stall, slow, vanish, blackhole, badcert or REASON=FRACTION")
                }
                simulatorArguments += ["--fail", item]
            }
        }
        if simulatorArguments.contains("--goaway-reason") && !simulatorArguments.contains("--goaway-after") {
            throw .data("--faults goaway-reason needs goaway=N")
        }
    }

    /// A mix of three to six faults drawn from `seed` (the same seed, the same mix).
    static func randomMix(seed: UInt64, deadline: Double) -> String {
        var random = SplitMix64(seed: seed)
        func pick(_ range: ClosedRange<Int>) -> Int { range.lowerBound + Int(random.next() % UInt64(range.count)) }
        func fraction(_ thousandths: ClosedRange<Int>) -> String { "0.\(String(pick(thousandths) + 1000).dropFirst())" }
        var candidates: [String] = [
            "latency=\(pick(1...20))",
            "TooManyRequests=\(fraction(1...20))",
            "InternalServerError=\(fraction(1...20))",
            "ServiceUnavailable=\(fraction(1...20))",
            "ExpiredProviderToken=\(fraction(1...3))",
            "retry-after=1",
            "reset=\(pick(700...5000))",
            "stall=\(pick(500...4000))",
            "slow=0.001:\(Int((deadline + 1) * 1000))",
            "vanish=\(Double(pick(2...8)) / 10):\(Double(pick(5...15)) / 10)",
            "blackhole=\(Double(pick(2...8)) / 10):\(Double(pick(5...15)) / 10)",
            "badcert=\(Double(pick(2...8)) / 10):\(Double(pick(5...10)) / 10)",
        ]
        let goAway = "goaway=\(pick(500...3000))"
        switch pick(0...2) {
        case 0: candidates.append(goAway)
        case 1: candidates.append(goAway + ",goaway-reason=Shutdown")
        default: candidates.append(goAway + ",goaway-reason=SunspotActivity")  // a reason nobody listed
        }
        var chosen: [String] = []
        for _ in 0..<pick(3...6) {
            let index = pick(0...(candidates.count - 1))
            chosen.append(candidates.remove(at: index))
        }
        // The disruptions are timed: at most one of them, so the windows do not overlap.
        let timed = chosen.filter { $0.hasPrefix("vanish") || $0.hasPrefix("blackhole") || $0.hasPrefix("badcert") }
        chosen.removeAll { timed.dropFirst().contains($0) }
        return chosen.joined(separator: ",")
    }
}

/// The built-in simulator of a fault run: the current child, restarted by the disruptions, and
/// the counters of every incarnation.
final class FaultyServer: @unchecked Sendable {
    // @unchecked: `current`, `statsFiles` and `cpuSeconds` are guarded by `lock`.
    /// What every incarnation of the server saw, summed.
    struct Counts {
        /// Pushes answered 200, and how many distinct tokens those were (fewer: a phone pushed twice).
        var accepted = 0
        var distinct = 0
        /// Answers the slow fault held back (`SimulatorCounters.answersHeldBack`).
        var heldBack = 0
        var cpuSeconds: Double
    }

    private let lock = Lock<Void>(())
    private var current: ChildSimulator
    private var statsFiles: [String] = []
    private var cpuSeconds = 0.0
    private let streams: Int, latency: Int, threads: Int, arguments: [String]
    private let statsDirectory: String
    private var thread: OSThread?

    init(streams: Int, latency: Int, threads: Int, plan: FaultPlan) throws(CLIError) {
        self.streams = streams; self.latency = plan.latency ?? latency; self.threads = threads
        statsDirectory = TemporaryDirectory.make(prefix: "sokuho-faults")
        arguments = plan.simulatorArguments
        let stats = statsDirectory + "/0.json"
        statsFiles = [stats]
        current = try ChildSimulator.start(streams: streams, latencyMilliseconds: self.latency, threads: threads, extra: arguments + ["--stats", stats])
    }

    var first: ChildSimulator { lock.withLock { _ in current } }

    /// Runs the plan's disruptions on a thread of their own, timed from now.
    func disrupt(_ plan: FaultPlan) {
        guard !plan.disruptions.isEmpty else { return }
        let started = MonotonicInstant.now()
        thread = OSThread.start(name: "sokuho-faults") { [self] in
            for disruption in plan.disruptions {
                let wait = disruption.at - (MonotonicInstant.now() - started).seconds
                if wait > 0 { usleep(useconds_t(wait * 1_000_000)) }
                let child = lock.withLock { _ in current }
                switch disruption.kind {
                case .blackhole:
                    kill(child.pid, SIGSTOP)
                    usleep(useconds_t(disruption.for * 1_000_000))
                    kill(child.pid, SIGCONT)
                case .vanish:
                    stopCurrent()
                    usleep(useconds_t(disruption.for * 1_000_000))
                    restart(like: child, certDirectory: child.certDirectory)
                case .badCertificate:
                    stopCurrent()
                    // Another CA's certificate on the same ports: every handshake fails verification.
                    restart(like: child, certDirectory: TemporaryDirectory.make(prefix: "sokuho-badcert"))
                    usleep(useconds_t(disruption.for * 1_000_000))
                    stopCurrent()
                    restart(like: child, certDirectory: child.certDirectory)
                }
            }
        }
    }

    private func stopCurrent() {
        lock.withLock { _ in cpuSeconds += current.stop() }
    }

    private func restart(like child: ChildSimulator, certDirectory: String) {
        lock.withLock { _ in
            let stats = statsDirectory + "/\(statsFiles.count).json"
            // The ports were just released; a retry covers the moment before the kernel lets go.
            for _ in 0..<50 {
                if let next = try? ChildSimulator.start(streams: streams, latencyMilliseconds: latency, threads: threads,
                                                        extra: arguments + ["--stats", stats], certDirectory: certDirectory,
                                                        ports: (child.port, child.managePort)) {
                    current = next
                    statsFiles.append(stats)
                    return
                }
                usleep(20_000)
            }
        }
    }

    /// Stops the server and sums every incarnation's counters.
    func finish() -> FaultyServer.Counts {
        thread?.join()
        stopCurrent()
        return lock.withLock { _ in
            var counts = Counts(cpuSeconds: cpuSeconds)
            for path in statsFiles {
                guard let bytes = try? InputFile.read(path, option: "--stats"), let json = try? JSONParser.parse(bytes) else { continue }
                counts.accepted += Int(json["accepted"]?.int64Value ?? 0)
                counts.distinct += Int(json["distinctTokens"]?.int64Value ?? 0)
                counts.heldBack += Int(json["answersHeldBack"]?.int64Value ?? 0)
            }
            DemoCommand.removeTree(statsDirectory)
            return counts
        }
    }
}
