import Testing

/// Issue 21, "one event runner": the rules of an event's run that were once written in two places
/// (the CLI's run and the daemon's submit) now have one home, and a second copy fails here.
@Suite struct EventRunRuleTests {
    static let rules = [
        // What a key + serial + body means against the serials stored under the key (superseded,
        // conflict, already sent, resume, new): EventAdmission decides, the CLI and the daemon
        // only word the decision. A comparison of a stored record's serial or body hash elsewhere
        // is that rule written again. (The cluster's ledger decides cluster-wide in a Lua script,
        // `RedisConnection.acceptEvent`, which must run atomically inside Redis; it is not Swift
        // and is not matched here.)
        DefinedOnceRule("the event admission rules (EventAdmission)", in: "Fanout/EventAdmission.swift") { line in
            line.contains(".serial >") || line.contains(".serial <") || line.contains("bodyHash ==") || line.contains("== bodyHash")
                || line.contains("bodyHash !=")
        },
        // Why a run stopped, in the words reports keep: StopReason renders it, callers decide by
        // its case, never by the text's prefix.
        DefinedOnceRule("the stop reasons' wording (StopReason)", in: "Fanout/StopReason.swift") { line in
            line.contains("\"circuit breaker:") || line.contains("hasPrefix(\"circuit breaker")
                || line.contains("deleting channels failed:")
        },
    ]

    @Test("Each rule of an event's run is written once", arguments: rules)
    func definedOnce(_ rule: DefinedOnceRule) throws {
        try rule.check()
    }
}
