import Vocabulary

/// Where the Debian package puts the reference that help texts point at (Packaging/build-deb
/// installs the repository's README.md there), so an operator on the server can open what
/// `--help` names; from a source checkout it is the repository's README.md.
enum InstalledDocumentation {
    static let readme = "/usr/share/doc/sokuho/README.md"

    /// A section of it as help texts name one: /usr/share/doc/sokuho/README.md, "Events".
    static func section(_ title: String) -> String { "\(readme), \"\(title)\"" }
}

/// `sokuho(1)` in roff, rendered from the command table that `--help` prints, so the man page
/// cannot drift from it: every command, its usage line, arguments, options (with their variables)
/// and details. `sokuho help --man` prints it; Packaging/build-deb installs it as
/// /usr/share/man/man1/sokuho.1.gz.
///
/// The output is plain ASCII: every other character is written as groff's `\[uXXXX]`, so `groff`
/// renders it without `preconv` and the bytes do not depend on the reader's locale. Every `-` is
/// `\-`, which man pages use for the characters one types (Debian's groff maps it to ASCII `-`).
enum ManPage {
    static func render(root: CommandSpec = Sokuho.root, version: String = SokuhoVersion.current) -> String {
        var page = Roff()
        page.request("TH", "SOKUHO", "1", "", "sokuho \(version)", "User Commands")
        // Ragged right and no hyphenation: option names, variables and JSON in the help texts are
        // typed, not read, and would otherwise be split ("SOKUHO_MAN-AGE_HOST") or stretched.
        page.request("nh")
        page.request("ad", "l")
        page.request("SH", "NAME")
        page.text("\(root.name) - \(root.summary)")
        page.request("SH", "SYNOPSIS")
        page.line("\(Roff.bold(root.name)) \(Roff.italic("command")) [\(Roff.italic("options"))]")
        page.request("br")
        page.line("\(Roff.bold(root.name)) [\(Roff.italic("command"))] \(Roff.bold("--help"))")
        page.request("SH", "DESCRIPTION")
        page.text(root.summary.prefix(1).uppercased() + root.summary.dropFirst() + ".")
        page.request("PP")
        page.text("""
        Each command below is what \(root.name) COMMAND --help prints, from the same table. Options \
        take their value as --name VALUE or --name=VALUE; an option marked [env VARIABLE] falls \
        back to that environment variable when it is absent; -- ends the options. Every command \
        takes --help.
        """)
        // The root's own details: its exit codes go to EXIT STATUS, anything else stays here.
        let rootParagraphs = paragraphs(root.details)
        let exitCodes = rootParagraphs.filter { $0.first?.hasPrefix("exit codes") == true }
        for paragraph in rootParagraphs where paragraph.first?.hasPrefix("exit codes") != true {
            write(paragraph, into: &page)
        }
        page.request("PP")
        page.text("""
        The configuration members, the event format, the metrics and the failover runbook are in \
        \(InstalledDocumentation.readme).
        """)
        page.request("SH", "COMMANDS")
        for (command, path) in commands(under: root, path: root.name) {
            section(command, path: path, into: &page)
        }
        if !exitCodes.isEmpty {
            page.request("SH", "EXIT STATUS")
            for paragraph in exitCodes { write(paragraph, into: &page) }
            page.text("Each command's own exit codes are in its section above.")
        }
        page.request("SH", "FILES")
        page.request("TP")
        page.line(Roff.italic(ServeCommand.packagedConfiguration))
        page.text("the configuration the Debian package's unit (sokuho.service) runs \(root.name) serve with")
        page.request("TP")
        page.line(Roff.italic(InstalledDocumentation.readme))
        page.text("the reference: configuration, events, API, metrics, operations and failover")
        page.request("SH", "SEE ALSO")
        page.line("\(Roff.bold("systemctl"))(1), \(Roff.bold("journalctl"))(1)")
        return page.output
    }

    /// Every command below `root`, depth first in table order, with its path ("sokuho tokens import").
    static func commands(under root: CommandSpec, path: String) -> [(CommandSpec, String)] {
        root.subcommands.flatMap { sub -> [(CommandSpec, String)] in
            let subPath = path + " " + sub.name
            return [(sub, subPath)] + commands(under: sub, path: subPath)
        }
    }

    private static func section(_ command: CommandSpec, path: String, into page: inout Roff) {
        page.request("SS", path)
        page.text(command.summary)
        if command.subcommands.isEmpty || command.run != nil {
            page.request("PP")
            page.line("\(Roff.bold(path)) \(Roff.escape(CommandLineParser.usage(of: command)))")
        }
        if !command.subcommands.isEmpty {
            page.request("PP")
            page.text("Commands: " + command.subcommands.map { "\(path) \($0.name)" }.joined(separator: ", ") + ".")
        }
        if !command.positionals.isEmpty {
            page.request("PP")
            page.text("Arguments:")
            for positional in command.positionals {
                page.request("TP")
                page.line(Roff.italic(positional.name))
                page.text(positional.help)
            }
        }
        if !command.options.isEmpty {
            page.request("PP")
            page.text("Options:")
            for option in command.options {
                page.request("TP")
                page.line(Roff.bold(option.name) + (option.value.map { " " + Roff.italic($0) } ?? ""))
                page.text(option.fullHelp)
            }
        }
        for paragraph in paragraphs(command.details) { write(paragraph, into: &page) }
    }

    /// `details` as the help prints it, split at blank lines.
    private static func paragraphs(_ details: String) -> [[Substring]] {
        details.split(separator: "\n", omittingEmptySubsequences: false)
            .split(whereSeparator: { $0.allSatisfy { $0 == " " } }).map(Array.init)
    }

    /// One paragraph of details. One with indented lines (exit-code tables, examples) keeps its
    /// lines as written; prose is filled.
    private static func write(_ paragraph: [Substring], into page: inout Roff) {
        page.request("PP")
        let preformatted = paragraph.contains { $0.hasPrefix(" ") }
        if preformatted { page.request("nf") }
        for line in paragraph { page.text(String(line)) }
        if preformatted { page.request("fi") }
    }
}

/// A roff document being written: requests (".SH NAME") and text lines, escaped.
struct Roff {
    private(set) var output = ""

    /// A request with its arguments, quoted where they hold a space or are empty (a placeholder);
    /// the others bare, as numeric ones (".ad l") must be.
    mutating func request(_ name: String, _ arguments: String...) {
        let quoted = arguments.map { argument in
            let text = Roff.escape(argument, breaks: false).replacing("\"", with: "\\(dq")
            return argument.isEmpty || argument.contains(" ") ? "\"" + text + "\"" : text
        }
        output += "." + ([name] + quoted).joined(separator: " ") + "\n"
    }

    /// A line of text to be escaped.
    mutating func text(_ text: String) { line(Roff.escape(text)) }

    /// A line already in roff (escaped, fonts set). One that would start with a control character
    /// is protected by `\&`.
    mutating func line(_ roff: String) {
        output += (roff.hasPrefix(".") || roff.hasPrefix("'") ? "\\&" : "") + roff + "\n"
    }

    static func bold(_ text: String) -> String { "\\fB" + escape(text) + "\\fR" }
    static func italic(_ text: String) -> String { "\\fI" + escape(text) + "\\fR" }

    /// Text as roff: `\` as `\e`, `-` as `\-`, anything beyond ASCII as `\[uXXXX]`. With `breaks`,
    /// a comma is followed by `\:` (a break point that prints nothing), so the JSON shapes of the
    /// `--json` options ({"pushes":…,"seconds":…}) can wrap instead of running past the margin.
    static func escape(_ text: String, breaks: Bool = true) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": result += "\\e"
            case "-": result += "\\-"
            case "," where breaks: result += ",\\:"
            case _ where scalar.isASCII: result.unicodeScalars.append(scalar)
            default:
                let hex = String(scalar.value, radix: 16, uppercase: true)
                result += "\\[u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex + "]"
            }
        }
        return result
    }
}
