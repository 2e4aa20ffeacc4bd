import JSONCore
import TokenStore

/// `sokuho store check`: reads every page and cross-checks the indexes with the records.
enum StoreCheckCommand {
    static let spec = CommandSpec(
        "check",
        summary: "check the store's integrity and schema version",
        options: [
            StoreAccess.option,
            OptionSpec("--json", help: "print {\"ok\":…,\"schemaVersion\":…,\"installations\":…,\"tokens\":…,\"topicEntries\":…,\"problems\":[…]}"),
        ],
        details: "Exit 0 when consistent, 78 when a problem was found (restore from a backup).",
        run: { invocation throws(CLIError) in
            let store = try StoreAccess.open(invocation, readOnly: true)
            let report = try StoreAccess.run { () throws(StoreError) in try store.check() }
            if invocation.flag("--json") {
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("ok"); writer.bool(report.isConsistent)
                writer.key("schemaVersion"); writer.int(report.schemaVersion)
                writer.key("installations"); writer.int(report.installations)
                writer.key("tokens"); writer.int(report.tokens)
                writer.key("topicEntries"); writer.int(report.topicEntries)
                writer.key("problems")
                writer.beginArray()
                for problem in report.problems { writer.string(problem) }
                writer.endArray()
                writer.endObject()
                invocation.console.print(writer.string)
            } else {
                for problem in report.problems { invocation.console.error(problem) }
                if report.moreProblems > 0 { invocation.console.error("… and \(report.moreProblems) more problems") }
                let verdict = report.isConsistent ? "ok" : "INCONSISTENT"
                invocation.console.print("\(verdict): schema \(report.schemaVersion) (current \(TokenStore.currentSchemaVersion)), \(report.installations) installations, \(report.tokens) tokens, \(report.topicEntries) topic entries")
            }
            return report.isConsistent ? .success : .config
        })
}
