#if canImport(Glibc)
import Glibc
#endif
import TokenStore
import Vocabulary

/// `sokuho store restore BACKUP`: the way back from `sokuho store backup`. The backup is copied
/// into a staging directory inside the store directory and checked whole there (it opens as a
/// store, every page and index is read) before anything of the store is touched; then one
/// `rename` puts it in place. A store that a process has open is never replaced.
enum StoreRestoreCommand {
    static let spec = CommandSpec(
        "restore",
        summary: "restore a backup into the store directory, checking it first",
        options: [
            StoreAccess.option,
            OptionSpec("--replace", help: "replace an existing store (kept as DIR/data.mdb.old-<time> until you remove it)"),
        ],
        positionals: [PositionalSpec("BACKUP", help: "a directory written by sokuho store backup, or its data.mdb")],
        details: """
        Stop the daemon first: a store that any process has open (sokuho serve, an import, a backup
        running) is refused. The restored store replaces DIR/data.mdb in one rename, so a restore
        cut short leaves the old store (and a DIR/restore-* directory to delete).

        exit codes: 0 restored · 65 the backup is damaged or inconsistent (nothing was changed;
                    take another backup) · 66 no backup at BACKUP · 73 DIR already holds a store
                    (pass --replace) · 75 the store is open in another process (stop sokuho serve:
                    systemctl stop sokuho) · 74 I/O error or disk full · 77 permission denied (run
                    as the store's owner: runuser -u sokuho --)
        """,
        run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        let backup = invocation.positional("BACKUP")!
        let directory = StoreAccess.directory(invocation)
        let replace = invocation.flag("--replace")
        try StoreAccess.requireOwner(directory, command: invocation.commandPath)
        try refuseLive(directory)
        guard access(TokenStore.backupFile(backup), F_OK) == 0 else {
            throw CLIError(.noInput, "no backup at \(TokenStore.backupFile(backup)); give the directory sokuho store backup wrote, or its data.mdb")
        }
        let exists = access(directory + "/data.mdb", F_OK) == 0
        if exists && !replace {
            throw CLIError(.cantCreate, "\(directory) already holds a token store; pass --replace to replace it (the old one is kept as \(directory)/data.mdb.old-<time>), or restore into another --store DIR")
        }
        let staged: StagedRestore
        do { staged = try TokenStore.stageRestore(backup: backup, into: directory) } catch {
            switch error {
            // The store's own advice ("restore it from a backup", "point --store at …") is wrong
            // for a backup being restored: say what the backup is, then what to do.
            case let .corrupt(_, detail):
                throw CLIError(.dataError, "the backup \(TokenStore.backupFile(backup)) cannot be restored: it is corrupt (\(detail)); nothing was changed, take another backup")
            case let .foreign(_, detail):
                throw CLIError(.dataError, "the backup \(TokenStore.backupFile(backup)) cannot be restored: it is not a Sokuho token store (\(detail)); nothing was changed, give a file sokuho store backup wrote")
            case .newerSchema:
                throw CLIError(.dataError, "the backup \(TokenStore.backupFile(backup)) cannot be restored: \(error.description); nothing was changed")
            case .missing:
                throw CLIError(.noInput, "no backup at \(TokenStore.backupFile(backup)); give the directory sokuho store backup wrote, or its data.mdb")
            default:
                throw StoreAccess.cliError(error)
            }
        }
        // Checked again right before the rename: the daemon may have started while the copy was checked.
        do { try refuseLive(directory) } catch { staged.discard(); throw error }
        let kept: String?
        do { kept = try staged.install(keepOldAs: exists ? String(WallClock.milliseconds() / 1000) : nil) } catch {
            staged.discard()
            throw StoreAccess.cliError(error)
        }
        let report = staged.report
        invocation.console.print("restored \(TokenStore.backupFile(backup)) into \(directory): ok, schema \(report.schemaVersion), \(report.installations) installations, \(report.tokens) tokens"
                                 + (kept.map { "; the previous store is kept as \($0) (delete it once the restored store serves)" } ?? ""))
        return .success
    }

    private static func refuseLive(_ directory: String) throws(CLIError) {
        guard TokenStore.isLive(directory) else { return }
        throw CLIError(.tempFail, "the token store at \(directory) is open in another process (sokuho serve, an import or a backup); stop it first (systemctl stop sokuho), then restore")
    }
}
