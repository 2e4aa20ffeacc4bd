import Testing
@testable import SokuhoCLI
import Vocabulary

/// The command line as a script sees it: exit codes, one-line errors, help everywhere.
@Suite struct CommandLineTests {
    func run(_ arguments: [String], environment: [String: String] = [:]) -> (ExitCode, String, String) {
        let captured = CapturedConsole()
        let code = Sokuho.run(arguments, environment: environment, console: captured.console)
        return (code, captured.out, captured.err)
    }

    @Test func versionJSONNamesAllFiveComponents() {
        let (code, out, _) = run(["version", "--json"])
        #expect(code == .success)
        #expect(out.hasPrefix("{\"sokuho\":\"\(SokuhoVersion.current)\",\"mbedtls\":\"2.28."))
        #expect(out.contains("\"nghttp2\":\"1.52."))
        #expect(out.contains("\"lmdb\":\"0.9.24\",\"libevent\":\"2.1.12-stable\"}"))
        let (dashCode, dashOut, _) = run(["--version"])
        #expect(dashCode == .success)
        #expect(dashOut.hasPrefix("sokuho \(SokuhoVersion.current)\n"))
    }

    @Test func unknownCommandIsOneLineAndExit64() {
        let (code, out, err) = run(["frobnicate"])
        #expect(code == .usage)
        #expect(out.isEmpty)
        #expect(err == "sokuho: unknown command 'frobnicate'; see 'sokuho --help'\n")
    }

    @Test func unknownOptionIsOneLineAndExit64() {
        let (code, _, err) = run(["version", "--jsn"])
        #expect(code == .usage)
        #expect(err == "sokuho version: unknown option '--jsn' (did you mean '--json'?); see 'sokuho version --help'\n")
        let (topCode, _, topErr) = run(["--frob"])
        #expect(topCode == .usage)
        #expect(topErr.split(separator: "\n").count == 1)
    }

    @Test func aMistypedCommandOrOptionIsAnsweredWithTheNameItResembles() {
        #expect(run(["serv"]).2 == "sokuho: unknown command 'serv' (did you mean 'serve'?); see 'sokuho --help'\n")
        let (code, _, err) = run(["serve", "--check-confg"])
        #expect(code == .usage)
        #expect(err == "sokuho serve: unknown option '--check-confg' (did you mean '--check-config'?); see 'sokuho serve --help'\n")
        #expect(run(["tokens", "imprt"]).2.contains("(did you mean 'import'?)"))
        // Nothing close, or a short word that resembles too much: no guess.
        #expect(!run(["frobnicate"]).2.contains("did you mean"))
        #expect(Suggestion.closest(to: "x", among: ["a", "b"]) == nil)
        #expect(Suggestion.closest(to: "stats", among: ["stat", "state"]) == nil, "two equally close: no guess")
        #expect(Suggestion.editDistance(Array("recieve".utf8), Array("receive".utf8)) == 1, "a swap of neighbours is one typo")
    }

    @Test func helpListsEverySubcommandAndEveryCommandHasHelp() {
        let (code, out, _) = run(["--help"])
        #expect(code == .success)
        func visit(_ command: CommandSpec, _ path: [String]) {
            for sub in command.subcommands {
                #expect(out.contains("  \(sub.name)") || path.count > 0)
                let (subCode, subOut, _) = run(path + [sub.name, "--help"])
                #expect(subCode == .success, "\(path + [sub.name]) --help")
                #expect(subOut.contains("usage: sokuho \((path + [sub.name]).joined(separator: " "))"))
                // Each positional once on the usage line (issue 24: `fanout --help` showed EVENT.json twice).
                let usage = subOut.split(separator: "\n").first { $0.hasPrefix("usage: ") }.map(String.init) ?? ""
                for positional in sub.positionals {
                    let words = usage.split(separator: " ").filter { $0 == positional.name || $0 == "[\(positional.name)]" }
                    #expect(words.count == 1, "\(path + [sub.name]) --help: '\(positional.name)' \(words.count) times in '\(usage)'")
                }
                visit(sub, path + [sub.name])
            }
        }
        visit(Sokuho.root, [])
    }

    @Test func optionValuesEnvironmentAndErrors() throws {
        let spec = CommandSpec("t", summary: "test", options: [
            OptionSpec("--team-id", value: "ID", help: "team", environment: "SOKUHO_TEAM_ID"),
            OptionSpec("--fail", value: "R=F", help: "fault", repeatable: true),
            OptionSpec("--count", value: "N", help: "n"),
            OptionSpec("--json", help: "json"),
        ], positionals: [PositionalSpec("FILE", help: "input", required: false)], run: { _ throws(CLIError) in .success })
        let root = CommandSpec("sokuho", summary: "root", subcommands: [spec])
        let parser = CommandLineParser(root: root)
        let console = CapturedConsole().console

        guard case let .run(_, inv) = try parser.parse(["t", "--fail", "a=0.1", "--fail=b=0.2", "--json", "in.txt"],
                                                      environment: ["SOKUHO_TEAM_ID": "TEAM123456"], console: console) else {
            Issue.record("expected a runnable command"); return
        }
        #expect(inv.strings("--fail") == ["a=0.1", "b=0.2"])
        #expect(inv.flag("--json"))
        #expect(inv.string("--team-id") == "TEAM123456")
        #expect(inv.positional("FILE") == "in.txt")
        #expect(throws: CLIError.self) { try inv.required("--count") }

        guard case let .run(_, inv2) = try parser.parse(["t", "--count", "abc", "--team-id", "X"], environment: ["SOKUHO_TEAM_ID": "Y"], console: console) else {
            Issue.record("expected a runnable command"); return
        }
        #expect(inv2.string("--team-id") == "X", "a flag beats the environment")
        do {
            _ = try inv2.int("--count", in: 1...10)
            Issue.record("a non-number must be refused")
        } catch {
            #expect(error.code == .dataError)
            #expect(error.message.contains("--count"))
        }

        for bad in [["t", "--count"], ["t", "--json=1"], ["t", "--count", "1", "--count", "2"], ["t", "a", "b"]] {
            do {
                _ = try parser.parse(bad, environment: [:], console: console)
                Issue.record("\(bad) must be a usage error")
            } catch {
                #expect(error.code == .usage)
            }
        }
    }
}
