/// `sokuho tokens …`: the token registry from the command line.
enum TokensCommand {
    static let spec = CommandSpec(
        "tokens",
        summary: "import, export, count, prune and remove registered tokens",
        subcommands: [
            TokensImportCommand.spec,
            TokensExportCommand.spec,
            TokensStatsCommand.spec,
            TokensPruneCommand.spec,
            TokensRemoveCommand.spec,
            TokensTargetsCommand.spec,
            TokensGenerateCommand.spec,
        ])
}
