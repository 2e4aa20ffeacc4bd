import JSONCore
import TokenStore
import Vocabulary

/// `sokuho tokens prune --expired`: sweeps expired activities, installations without tokens or
/// not refreshed for `--max-age` days, and old event progress.
enum TokensPruneCommand {
    static let defaultMaxAgeDays = 180

    static let spec = CommandSpec(
        "prune",
        summary: "remove expired activities, stale installations and old event progress",
        options: [
            StoreAccess.option,
            OptionSpec("--expired", help: "remove what has expired (required: says what to prune)"),
            OptionSpec("--max-age", value: "DAYS", help: "an installation not refreshed for this long has expired (default \(defaultMaxAgeDays))"),
            OptionSpec("--json", help: "print {\"installations\":…,\"activities\":…,\"events\":…}"),
        ],
        details: """
        Expired: Live Activities past their end (at most 8 hours after start), installations with no
        token left (APNs reported them dead) or not refreshed for --max-age days, event progress a week
        past its deadline. Tokens APNs reports dead are pruned by the sender as it goes.
        """,
        run: { invocation throws(CLIError) in
            guard invocation.flag("--expired") else {
                throw CLIError.usage("sokuho tokens prune: say what to prune: --expired; see 'sokuho tokens prune --help'")
            }
            let days = try invocation.int("--max-age", in: 1...36500) ?? defaultMaxAgeDays
            let store = try StoreAccess.open(invocation, readOnly: false)
            defer { store.close() }
            let operation = WriteOperation.sweepExpired(now: WallClock.milliseconds(), installationMaxAge: UInt64(days) * 86_400_000)
            let outcomes = try StoreAccess.run { () throws(StoreError) in try store.write([operation]) }
            guard case let .swept(counts) = outcomes.first else { return .software }
            if invocation.flag("--json") {
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("installations"); writer.int(counts.installations)
                writer.key("activities"); writer.int(counts.activities)
                writer.key("events"); writer.int(counts.events)
                writer.endObject()
                invocation.console.print(writer.string)
            } else {
                invocation.console.print("removed \(counts.installations) installations, \(counts.activities) activities, \(counts.events) event records")
            }
            return .success
        })
}
