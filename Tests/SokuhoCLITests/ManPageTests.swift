import Glibc
import Testing
@testable import SokuhoCLI

/// sokuho(1), rendered from the command table (issue 24: the package had no man page, and a
/// separate one would drift from `--help`).
@Suite struct ManPageTests {
    let page = ManPage.render()

    /// The lines between a command's `.SS` heading and the next heading.
    func section(_ path: String) -> String? {
        let heading = path.contains(" ") ? ".SS \"\(path)\"\n" : ".SS \(path)\n"
        guard let start = page.firstRange(of: heading) else { return nil }
        let rest = page[start.upperBound...]
        let end = rest.firstRange(of: "\n.S")?.lowerBound ?? rest.endIndex
        return String(rest[..<end]) + "\n"
    }

    @Test func theManPageHasASectionForEveryCommandWithEachOfItsOptionsAndArguments() {
        let commands = ManPage.commands(under: Sokuho.root, path: "sokuho")
        #expect(commands.count > 25, "the whole tree, groups and their commands")
        for (command, path) in commands {
            guard let text = section(path) else {
                Issue.record("no section for \(path)")
                continue
            }
            #expect(text.contains(Roff.escape(command.summary)), "\(path): its summary")
            for option in command.options {
                let tag = Roff.bold(option.name) + (option.value.map { " " + Roff.italic($0) } ?? "")
                #expect(text.contains(".TP\n\(tag)\n\(Roff.escape(option.fullHelp))\n"), "\(path): \(option.name)")
            }
            for positional in command.positionals {
                #expect(text.contains(".TP\n\(Roff.italic(positional.name))\n"), "\(path): \(positional.name)")
            }
            if command.run != nil {
                #expect(text.contains(Roff.escape(CommandLineParser.usage(of: command))), "\(path): its usage line")
            }
        }
    }

    @Test func theManPageIsASCIIWithAWhatisLineAndTheInstalledReadme() {
        #expect(page.utf8.allSatisfy { $0 < 0x80 }, "non-ASCII is written as \\[uXXXX]")
        #expect(page.hasPrefix(".TH SOKUHO 1 \"\" \"sokuho "))
        // lintian and mandb read the NAME line as "name \- description".
        #expect(page.contains(".SH NAME\nsokuho \\- fan out APNs pushes"))
        #expect(page.contains(InstalledDocumentation.readme.replacing("-", with: "\\-")))
        #expect(page.contains(".SH \"EXIT STATUS\"\n"))
        #expect(!page.contains("\n\n"), "a blank line is not roff; paragraphs are .PP")
    }

    @Test func roffEscapingKeepsTypedCharactersAndProtectsControlLines() {
        #expect(Roff.escape("--store a\\b ≥ 1") == "\\-\\-store a\\eb \\[u2265] 1")
        #expect(Roff.escape("速") == "\\[u901F]")
        #expect(Roff.escape("{\"a\":1,\"b\":2}") == "{\"a\":1,\\:\"b\":2}")
        var roff = Roff()
        roff.text(".not a request")
        roff.text("'nor this")
        roff.request("SS", "sokuho tokens import")
        roff.request("ad", "l")
        #expect(roff.output == "\\&.not a request\n\\&'nor this\n.SS \"sokuho tokens import\"\n.ad l\n")
    }

    @Test func helpManPrintsThePageAndTheHelpPointsAtTheInstalledReadme() {
        let fixture = CLIFixture()
        let (code, out, err) = fixture.run(["help", "--man"])
        #expect(code == .success)
        #expect(err.isEmpty)
        #expect(out == page)
        #expect(fixture.run(["--help"]).1.contains("'sokuho help --man'"))
        #expect(fixture.run(["serve", "--help"]).1.contains("see /usr/share/doc/sokuho/README.md, \"Daemon configuration\""))
        #expect(fixture.run(["fanout", "--help"]).1.contains("see /usr/share/doc/sokuho/README.md, \"Events\""))
    }

    /// groff as man(1) runs it, every warning on, at three widths: a warning ("can't break line",
    /// an unknown escape) fails. Packaging/test renders the packaged page the same way.
    @Test func groffRendersTheManPageWithoutAWarning() throws {
        guard CLIFixture.shell("command -v groff >/dev/null") == 0 else {
            Issue.record("groff is missing: Toolchain/setup --for-tests installs groff-base")
            return
        }
        let fixture = CLIFixture()
        let file = fixture.file("sokuho.1", page)
        for width in [60, 80, 120] {
            let status = CLIFixture.shell("LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -rLL=\(width)n -P-cbou '\(file)' > '\(file).txt' 2> '\(file).err'")
            #expect(status == 0)
            #expect(CLIFixture.readFile(file + ".err") == "", "groff at \(width) columns")
            let text = CLIFixture.readFile(file + ".txt")
            // -P-cbou: plain text, no overstruck bold, so the heading reads as typed.
            #expect(text.contains("\n   sokuho tokens import\n"))
            #expect(text.contains("--store DIR"), "\\- renders as the ASCII '-' one types")
        }
    }
}
