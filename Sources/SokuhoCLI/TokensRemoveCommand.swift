import JSONCore
import TokenStore

/// `sokuho tokens remove --installation-id ID`: removes one installation, its tokens and their
/// index entries. The phone's own way is `DELETE /v1/installations/{id}`; this is the way for an id
/// the API cannot address (one with "/", or "." or ".."; `sokuho store check` lists them), and
/// for an operator removing a phone by hand.
///
/// Like `tokens prune` and `tokens import`, it runs beside `sokuho serve`: the removal is one
/// write transaction under the store's writer lock, as the daemon's own writes are, so it is not
/// refused while the daemon holds the store (only `store restore`, which replaces the file, is).
enum TokensRemoveCommand {
    static let spec = CommandSpec(
        "remove",
        summary: "remove one installation and its tokens by id",
        options: [
            StoreAccess.option,
            OptionSpec("--installation-id", value: "ID", help: "the installation's id, exactly as stored (required; quote it for the shell)"),
            OptionSpec("--json", help: "print {\"installationId\":…,\"removed\":true|false}"),
        ],
        details: """
        For an id the HTTP API cannot address (it contains '/' or is '.' or '..': the phone can
        never PUT or DELETE it), which 'sokuho store check' lists with this command for each. Safe
        while sokuho serve runs: the removal is one write transaction, as the daemon's own.

        exit codes: 0 removed · 1 no installation has that id (nothing changed) · 64 no
                    --installation-id · 65 the id cannot be a stored id (empty, too long, a control
                    character) · 66 no store at --store · 75 the store's writer lock is held too long
                    · 77 permission denied (run as the store's owner: runuser -u sokuho --)
        """,
        run: run)

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        let id = try invocation.required("--installation-id")
        // Checked here so the message names the flag, not the store's "id".
        do { try StoreLimits.checkName(id, field: "--installation-id") } catch {
            throw CLIError.data("\(error.description); give the id as 'sokuho store check' or 'sokuho tokens export' prints it")
        }
        let store = try StoreAccess.open(invocation, readOnly: false)
        defer { store.close() }
        // Looked up first because the removal reports nothing: a phone registering the id in
        // between is removed too, which is what was asked.
        let exists = try StoreAccess.run { () throws(StoreError) in try store.installation(id: id) != nil }
        if exists {
            _ = try StoreAccess.run { () throws(StoreError) in try store.write([.removeInstallation(id: id)]) }
        }
        if invocation.flag("--json") {
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("installationId"); writer.string(id)
            writer.key("removed"); writer.bool(exists)
            writer.endObject()
            invocation.console.print(writer.string)
        } else if exists {
            invocation.console.print("removed installation \(ShellWord.quoted(id)) and its tokens")
        } else {
            invocation.console.error("sokuho tokens remove: no installation \(ShellWord.quoted(id)) in \(StoreAccess.directory(invocation)); nothing was changed (ids are exact: 'sokuho tokens export' lists them)")
        }
        return exists ? .success : .refused
    }

    /// The command line that removes `id` from the store at `directory`, ready to paste.
    static func command(id: String, directory: String) -> String {
        "sokuho tokens remove --store \(ShellWord.quoted(directory)) --installation-id \(ShellWord.quoted(id))"
    }
}

/// A string as one shell word: bare when it is plain, else in single quotes, else (a control
/// character, which no Sokuho write stores but a damaged or foreign record might hold) in bash's
/// `$'…'` with `\xHH` escapes, so printing it never puts a raw control character on a terminal.
enum ShellWord {
    static func quoted(_ text: String) -> String {
        let plain = !text.isEmpty && text.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            default: "_-.,:/@%+=".utf8.contains(byte)
            }
        }
        if plain { return text }
        let hasControl = text.unicodeScalars.contains { $0.value < 0x20 || (0x7f..<0xa0).contains($0.value) }
        if !hasControl {
            var out = "'"
            for character in text { out += character == "'" ? "'\\''" : String(character) }
            return out + "'"
        }
        var out = "$'"
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\\": out += "\\\\"
            case "'": out += "\\'"
            case _ where scalar.value < 0x20 || (0x7f..<0xa0).contains(scalar.value):
                for byte in String(scalar).utf8 { out += "\\x" + (byte < 16 ? "0" : "") + String(byte, radix: 16) }
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "'"
    }
}
