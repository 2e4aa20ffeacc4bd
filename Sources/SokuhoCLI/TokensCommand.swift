/// `sokuho tokens …`: the token registry from the command line.
enum TokensCommand {
    static let spec = CommandSpec(
        "tokens",
        summary: "import, export, count and prune registered tokens",
        subcommands: [
            TokensImportCommand.spec,
            TokensExportCommand.spec,
            TokensStatsCommand.spec,
            TokensPruneCommand.spec,
            TokensTargetsCommand.spec,
            TokensGenerateCommand.spec,
        ])
}
