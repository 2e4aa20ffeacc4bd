#if canImport(Glibc)
import Glibc
#endif
import APNs
import JSONCore
import TokenStore

/// `sokuho tokens targets`: streams the targets an event of a level on a topic would reach,
/// exactly as a fan-out reads them, and counts them. Answers "how many phones get this?" and is
/// the README's target-streaming benchmark.
enum TokensTargetsCommand {
    static let spec = CommandSpec(
        "targets",
        summary: "count the tokens an event on a topic would reach (streams them like a fan-out)",
        options: [
            StoreAccess.option,
            OptionSpec("--app", value: "BUNDLE", help: "the app (bundle id)"),
            OptionSpec("--environment", value: "ENV", help: "production or sandbox (default production)"),
            OptionSpec("--topic", value: "NAME", help: "the topic, e.g. region:301"),
            OptionSpec("--level", value: "L", help: "the event's level 0-255: tokens with minLevel ≤ L (default 255)"),
            OptionSpec("--batch", value: "N", help: "targets per read batch (default 4096)"),
            OptionSpec("--json", help: "print {\"targets\":…,\"pushToStart\":…,\"device\":…,\"seconds\":…,\"fcm\":…}"),
        ],
        run: { invocation throws(CLIError) in
            let app = try invocation.required("--app")
            let topic = try invocation.required("--topic")
            let environment = Environment(rawValue: try invocation.choice("--environment", ["production", "sandbox"]) ?? "production")!
            let level = UInt8(try invocation.int("--level", in: 0...255) ?? 255)
            let batchSize = try invocation.int("--batch", in: 1...1_000_000) ?? 4096
            let store = try StoreAccess.open(invocation, readOnly: true)
            let start = monotonicSeconds()
            let scan = store.scanTopic(app: app, environment: environment, topic: topic, level: level, batch: batchSize)
            var batch = TargetBatch()
            var counts: [TokenKind: Int] = [.pushToStart: 0, .device: 0]
            try StoreAccess.run { () throws(StoreError) in
                while try scan.next(into: &batch) {
                    for kind in batch.kinds { counts[kind, default: 0] += 1 }
                }
            }
            let seconds = monotonicSeconds() - start
            let total = counts.values.reduce(0, +)
            let pushToStart = counts[.pushToStart] ?? 0
            let device = counts[.device] ?? 0
            let fcm = counts[.fcm] ?? 0
            if invocation.flag("--json") {
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("targets"); writer.int(total)
                writer.key("pushToStart"); writer.int(pushToStart)
                writer.key("device"); writer.int(device)
                writer.key("seconds"); writer.double((seconds * 1000).rounded() / 1000)
                // Added last, so the members that were there keep their place.
                writer.key("fcm"); writer.int(fcm)
                writer.endObject()
                invocation.console.print(writer.string)
            } else {
                let milliseconds = Int((seconds * 1000).rounded())
                invocation.console.print("\(topic) level \(level): \(total) targets (\(pushToStart) pushToStart, \(device) device\(fcm > 0 ? ", \(fcm) fcm" : "")) streamed in \(milliseconds) ms")
            }
            return .success
        })

    static func monotonicSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
