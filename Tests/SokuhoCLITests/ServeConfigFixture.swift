import Crypto
import Daemon
import DaemonConfiguration
import Runtime
import Glibc

/// A directory with what a valid `sokuho serve` configuration points at: a generated `.p8` key
/// (mode 0600, as Apple's download should be kept) and an admin token file (0600).
final class ServeConfigFixture {
    let files = CLIFixture()
    let keyFile: String
    let tokenFile: String

    init() throws {
        keyFile = files.directory + "/AuthKey_KEY0000001.p8"
        try SigningKey.generateP8(at: keyFile)
        tokenFile = files.file("admin.token", "s3cret-token-0123456789abcdef\n")
        chmod(tokenFile, 0o600)
    }

    /// One app's JSON object; `extra` adds members (e.g. `"connections": 8`).
    func app(bundle: String = "com.example.quake", environment: String = "production", extra: String = "") -> String {
        #"{"bundleID": "\#(bundle)", "teamID": "TEAM000001", "keyID": "KEY0000001", "keyFile": "\#(keyFile)", "environment": "\#(environment)"\#(extra)}"#
    }

    /// A whole configuration: the given apps, the token file, a store, and `extra` members.
    func json(apps: [String]? = nil, extra: String = "") -> String {
        #"{"apps": [\#((apps ?? [app()]).joined(separator: ", "))], "adminTokenFile": "\#(tokenFile)", "storePath": "/srv/sokuho"\#(extra)}"#
    }

    /// The configuration file written into the directory.
    func configFile(_ text: String) -> String { files.file("sokuho.json", text) }

    func load(_ text: String?, environment: [String: String] = [:], flags: [String: [String]] = [:]) throws(ConfigurationError) -> ServeConfiguration {
        try ServeConfiguration.load(file: text.map { Array($0.utf8) }, environment: environment, flags: flags)
    }
}
