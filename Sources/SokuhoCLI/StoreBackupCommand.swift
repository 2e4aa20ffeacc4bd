import TokenStore

/// `sokuho store backup DEST`: a hot, consistent, compacted copy (`mdb_env_copy2`), safe while
/// `sokuho serve` or an import writes. Also how a standby is seeded.
enum StoreBackupCommand {
    static let spec = CommandSpec(
        "backup",
        summary: "copy the live store, compacted and consistent, into DEST",
        options: [StoreAccess.option],
        positionals: [PositionalSpec("DEST", help: "a new or empty directory; it receives data.mdb")],
        details: "The copy is a complete store: use it with --store DEST, or copy it back to restore.",
        run: { invocation throws(CLIError) in
            let destination = invocation.positional("DEST")!
            let store = try StoreAccess.open(invocation, readOnly: true)
            try StoreAccess.run { () throws(StoreError) in try store.backup(to: destination) }
            invocation.console.print("backed up \(store.directory) to \(destination)/data.mdb")
            return .success
        })
}
