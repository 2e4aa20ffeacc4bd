import JSONCore
import TokenStore

/// `sokuho store check`: reads every page and cross-checks the indexes with the records.
enum StoreCheckCommand {
    static let spec = CommandSpec(
        "check",
        summary: "check the store's integrity and schema version",
        options: [
            StoreAccess.option,
            OptionSpec("--json", help: "print {\"ok\":…,\"schemaVersion\":…,\"installations\":…,\"tokens\":…,\"topicEntries\":…,\"problems\":[…],\"unaddressableInstallations\":…,\"unaddressableInstallationIds\":[…]}"),
        ],
        details: """
        Exit 0 when consistent, 78 when a problem was found (restore from a backup).
        Installations whose id the HTTP API cannot address (it contains '/' or is '.' or '..', stored
        before the API refused such ids, or imported) are listed as a warning with the command that
        removes each (sokuho tokens remove); the store is consistent, so the exit is still 0.
        """,
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
                writer.key("unaddressableInstallations"); writer.int(report.unaddressableInstallations)
                writer.key("unaddressableInstallationIds")
                writer.beginArray()
                for id in report.unaddressableInstallationIDs { writer.string(id) }
                writer.endArray()
                writer.endObject()
                invocation.console.print(writer.string)
            } else {
                for problem in report.problems { invocation.console.error(problem) }
                if report.moreProblems > 0 { invocation.console.error("… and \(report.moreProblems) more problems") }
                warnUnaddressable(report, directory: StoreAccess.directory(invocation), console: invocation.console)
                let verdict = report.isConsistent ? "ok" : "INCONSISTENT"
                let warning = report.unaddressableInstallations > 0 ? ", \(report.unaddressableInstallations) the API cannot address (see above)" : ""
                invocation.console.print("\(verdict): schema \(report.schemaVersion) (current \(TokenStore.currentSchemaVersion)), \(report.installations) installations\(warning), \(report.tokens) tokens, \(report.topicEntries) topic entries")
            }
            // Unaddressable ids do not change the exit: the store is consistent (every index agrees,
            // their phones still get pushes), and 78 means "restore from a backup", which would
            // bring them back. Scripts that gate on the check (a restore, a deploy) keep passing;
            // the warning and the JSON fields say what to clean up.
            return report.isConsistent ? .success : .config
        })

    /// The warning section for installations the API cannot address: how many, why it matters,
    /// and the exact command removing each listed one (ids are not secrets; `ShellWord` escapes
    /// what a terminal should not receive raw).
    static func warnUnaddressable(_ report: StoreCheckReport, directory: String, console: Console) {
        let count = report.unaddressableInstallations
        guard count > 0 else { return }
        console.error("warning: \(count) installation\(count == 1 ? " has an id" : "s have ids") the HTTP API cannot address "
                      + "(\(StoreLimits.addressableInstallationIDRule)): the phone can never update or delete \(count == 1 ? "it" : "them") "
                      + "through /v1/installations/{id}. The store is consistent and they still get pushes; remove \(count == 1 ? "it" : "each") with:")
        for id in report.unaddressableInstallationIDs {
            console.error("  " + TokensRemoveCommand.command(id: id, directory: directory))
        }
        let unlisted = count - report.unaddressableInstallationIDs.count
        if unlisted > 0 { console.error("… and \(unlisted) more: run sokuho store check again after removing these") }
    }
}
