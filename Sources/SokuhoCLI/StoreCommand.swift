/// `sokuho store …`: the token store as a whole (backup, integrity).
enum StoreCommand {
    static let spec = CommandSpec(
        "store",
        summary: "back up, restore and check the token store",
        subcommands: [
            StoreBackupCommand.spec,
            StoreCheckCommand.spec,
            StoreRestoreCommand.spec,
        ])
}
