import TokenStore

/// `sokuho store backup DEST`: a hot, consistent copy rewritten packed (every database in key
/// order, full pages; `TokenStore.backup`), safe while `sokuho serve` or an import writes. Also how
/// a standby is seeded, and how a store is compacted: use the copy in its place.
enum StoreBackupCommand {
    static let spec = CommandSpec(
        "backup",
        summary: "copy the live store, consistent and packed, into DEST",
        options: [StoreAccess.option],
        positionals: [PositionalSpec("DEST", help: "a new or empty directory; it receives data.mdb")],
        details: "The copy is a complete store, rewritten with full pages (about a third smaller than a store filled over time): use it with --store DEST, or move it into place to restore or compact. A failed backup leaves no data.mdb behind.",
        run: { invocation throws(CLIError) in
            let destination = invocation.positional("DEST")!
            let store = try StoreAccess.open(invocation, readOnly: true)
            do throws(StoreError) { try store.backup(to: destination) } catch {
                // The store is readable (it was opened): a refusal here is the destination's.
                if case let .permissionDenied(path) = error {
                    throw CLIError(.noPermission, "cannot write the backup into \(path): permission denied for this user; "
                                   + "choose a directory it can write (the store's owner, e.g. runuser -u sokuho --, needs write access to DEST)")
                }
                throw StoreAccess.cliError(error)
            }
            invocation.console.print("backed up \(store.directory) to \(destination)/data.mdb")
            return .success
        })
}
