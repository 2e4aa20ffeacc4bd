import JSONCore
import TokenStore

/// `sokuho tokens stats`: counts per app, environment, kind and topic; file and map use.
enum TokensStatsCommand {
    static let spec = CommandSpec(
        "stats",
        summary: "count tokens per app, environment, kind and topic; show file size and map use",
        options: [
            StoreAccess.option,
            OptionSpec("--json", help: "print the counts as one JSON object"),
        ],
        run: { invocation throws(CLIError) in
            let store = try StoreAccess.open(invocation, readOnly: true)
            let stats = try StoreAccess.run { () throws(StoreError) in try store.statistics() }
            if invocation.flag("--json") {
                invocation.console.print(json(stats, directory: store.directory))
            } else {
                print(stats, directory: store.directory, console: invocation.console)
            }
            return .success
        })

    static func json(_ stats: StoreStatistics, directory: String) -> String {
        String(decoding: stats.json(store: directory), as: UTF8.self)
    }

    static func print(_ stats: StoreStatistics, directory: String, console: Console) {
        func mebibytes(_ bytes: Int) -> String {
            let tenths = (bytes * 10 + (1 << 19)) >> 20
            return "\(tenths / 10).\(tenths % 10) MiB"
        }
        console.print("store \(directory) (schema \(stats.schemaVersion))")
        console.print("file \(mebibytes(stats.fileBytes)) on disk; map \(mebibytes(stats.usedBytes)) used of \(mebibytes(stats.mapBytes))")
        console.print("installations \(stats.installations), tokens \(stats.totalTokens), activities \(stats.activities), channels \(stats.channels), events \(stats.events)")
        if !stats.tokens.isEmpty {
            console.print("tokens:")
            for count in stats.tokens {
                console.print("  \(count.app) \(count.environment.name) \(count.kind.name): \(count.count)")
            }
        }
        if !stats.topics.isEmpty {
            console.print("topics:")
            for count in stats.topics {
                console.print("  \(count.app) \(count.environment.name) \(count.topic): \(count.count)")
            }
        }
    }
}
