#if canImport(Glibc)
import Glibc
#endif
import APNs
import Crypto
import HTTP2
import Sender

/// The options every command that talks to APNs shares: credentials and endpoint. One declaration,
/// so `send`, `channels` and `bench` spell them identically.
enum APNsConnectionOptions {
    static let credentials: [OptionSpec] = [
        OptionSpec("--team-id", value: "ID", help: "your 10-character Apple Team ID", environment: "SOKUHO_TEAM_ID"),
        OptionSpec("--key-id", value: "ID", help: "the 10-character ID of your APNs auth key", environment: "SOKUHO_KEY_ID"),
        OptionSpec("--key", value: "FILE.p8", help: "the APNs auth key (.p8) downloaded from Apple", environment: "SOKUHO_KEY"),
    ]

    static let endpoint: [OptionSpec] = [
        OptionSpec("--environment", value: "ENV", help: "sandbox (default) or production", environment: "SOKUHO_ENVIRONMENT"),
        OptionSpec("--host", value: "HOST:PORT", help: "push host instead of Apple's (e.g. the simulator's)", environment: "SOKUHO_HOST"),
        OptionSpec("--manage-host", value: "HOST:PORT", help: "channel-management host instead of Apple's", environment: "SOKUHO_MANAGE_HOST"),
        OptionSpec("--ca-file", value: "PEM", help: "trust this CA instead of the system bundle (the simulator's ca.pem)", environment: "SOKUHO_CA_FILE"),
        // TLS refusals for a name mismatch tell the user to pass this, so every command that connects has it.
        OptionSpec("--server-name", value: "NAME", help: "the TLS name to verify the server's certificate for (default: the host)"),
    ]

    static let topic = OptionSpec("--topic", value: "BUNDLE_ID", help: "your app's bundle ID; push-type suffixes are added for you",
                                  environment: "SOKUHO_TOPIC")

    static var all: [OptionSpec] { credentials + [topic] + endpoint }

    /// Provider tokens from `--team-id`, `--key-id`, `--key`.
    static func providerTokens(_ invocation: Invocation) throws(CLIError) -> ProviderTokenSource {
        let teamID = try invocation.required("--team-id")
        let keyID = try invocation.required("--key-id")
        let path = try invocation.required("--key")
        do {
            let key = try SigningKey(contentsOf: path)
            return ProviderTokenSource(signer: try ProviderTokenSigner(key: key, keyID: keyID, teamID: teamID))
        } catch {
            if case .keyFileMissing = error { throw CLIError(.noInput, error.description) }
            // A file that cannot be read (a directory, permissions) is not an invalid key.
            if case .keyFileUnreadable = error { throw CLIError(.noInput, error.description) }
            throw CLIError(.dataError, error.description)
        }
    }

    /// What one request of `send` or `channels` came back with, and the `iat` of the provider token
    /// it carried (a refusal's message diagnoses the clock with it).
    struct Answered {
        var answer: ConnectionPool.Answer
        var tokenIssuedAt: Int64
    }

    /// Sends `request` to `endpoint` through a one-connection pool, the fan-out's connection rules
    /// and classifier (429/503 retried with back-off, refused streams resent), all within
    /// `--timeout`. A key that cannot sign is exit 65 before anything is sent; no answer at all
    /// (unreachable, TLS, the deadline) is exit 69.
    static func perform(_ request: ConnectionPool.Request, to endpoint: (host: String, port: Int),
                        _ invocation: Invocation) throws(CLIError) -> Answered {
        let tokens = try providerTokens(invocation)
        let tls = try tls(invocation)
        let timeout = Duration.seconds(try invocation.double("--timeout", in: 0.1...3600) ?? 30)
        // Signed here first, so a key that cannot sign is refused before a connection opens; the
        // pool presents the same token (one per 30-minute window, signed deterministically).
        var lease: ProviderTokenLease?
        let token: ProviderToken
        do { token = try tokens.token(for: &lease) } catch { throw CLIError(.dataError, error.description) }
        var configuration = PoolConfiguration(host: endpoint.host, port: endpoint.port, tls: tls)
        configuration.serverName = try APNsConnectionOptions.serverName(invocation)
        configuration.providerTokens = tokens
        let answer: ConnectionPool.Answer
        do { answer = try ConnectionPool.perform([request], configuration: configuration, timeout: timeout)[0] } catch {
            throw CLIError(.unavailable, "cannot start a connection: \(error)")
        }
        if let failure = answer.failure { throw CLIError(.unavailable, "\(endpoint.host):\(endpoint.port): \(failure)") }
        return Answered(answer: answer, tokenIssuedAt: token.issuedAt)
    }

    /// `--server-name`: a DNS name or IP address the certificate must be for. Anything else (empty,
    /// control characters, spaces) could only fail the handshake as "unreachable" (69); it is
    /// invalid input (65), refused before a connection opens.
    static func serverName(_ invocation: Invocation) throws(CLIError) -> String? {
        guard let name = invocation.string("--server-name") else { return nil }
        let allowed = name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":")
        }
        guard !name.isEmpty, name.utf8.count <= 253, allowed else {
            throw .data("--server-name must be a DNS name or IP address (letters, digits, '-', '.', ':'; at most 253 characters), not '\(String(name.unicodeScalars.prefix(64).map { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7f ? Character($0) : "?" }))'")
        }
        return name
    }

    static func environment(_ invocation: Invocation) throws(CLIError) -> APNs.Environment {
        guard let name = invocation.string("--environment") else { return .sandbox }
        do { return try APNs.Environment(name: name) } catch { throw .data("--environment: \(error.message)") }
    }

    /// `--host` (or Apple's push host for the environment) as host and port.
    static func pushEndpoint(_ invocation: Invocation) throws(CLIError) -> (host: String, port: Int) {
        // Checked even when --host replaces its host: a misspelt environment is never ignored.
        let environment = try environment(invocation)
        if let text = invocation.string("--host") { return try hostPort(text, option: "--host") }
        let endpoint = environment.devicePush
        return (endpoint.host, endpoint.port)
    }

    /// `--manage-host` (or Apple's channel-management host for the environment).
    static func manageEndpoint(_ invocation: Invocation) throws(CLIError) -> (host: String, port: Int) {
        let environment = try environment(invocation)
        if let text = invocation.string("--manage-host") { return try hostPort(text, option: "--manage-host") }
        let endpoint = environment.channelManagement
        return (endpoint.host, endpoint.port)
    }

    static func tls(_ invocation: Invocation) throws(CLIError) -> TLSConfiguration {
        let caFile = invocation.string("--ca-file")
        do { return try TLSConfiguration.client(caFile: caFile) } catch {
            guard let caFile else { throw CLIError(.config, error.description) }
            // Missing or unreadable is no input (66); a file that holds no certificate is invalid
            // input (65), like a .p8 that holds no key.
            var status = stat()
            let readable = stat(caFile, &status) == 0 && status.st_mode & S_IFMT == S_IFREG && access(caFile, R_OK) == 0
            throw CLIError(readable ? .dataError : .noInput, error.description)
        }
    }

    static func bundle(_ invocation: Invocation) throws(CLIError) -> BundleID {
        let text = try invocation.required("--topic")
        do { return try BundleID(text) } catch { throw .data("--topic: \(error.message)") }
    }

    /// "host:port", "[v6]:port"; the message names the option.
    static func hostPort(_ text: String, option: String) throws(CLIError) -> (host: String, port: Int) {
        do throws(ValidationError) {
            let endpoint = try Endpoint(parsing: text, field: option)
            return (endpoint.host, endpoint.port)
        } catch {
            throw .data(error.description)
        }
    }
}
