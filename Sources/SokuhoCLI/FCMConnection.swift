import APNs
import Crypto
import FCM
import IO
import Sender

/// What `send --provider fcm` and `bench --provider fcm` share: the service account, its access
/// tokens (the first one had before anything is sent), and one message through a one-connection pool.
enum FCMConnection {
    /// `--service-account FILE`: missing 66, not a service account 65 (the message names the member).
    static func serviceAccount(_ invocation: Invocation) throws(CLIError) -> ServiceAccount {
        try serviceAccount(file: try invocation.required("--service-account"), option: "--service-account")
    }

    static func serviceAccount(file path: String, option: String) throws(CLIError) -> ServiceAccount {
        let bytes = try InputFile.read(path, option: option, limit: 1024 * 1024)
        do { return try ServiceAccount(json: bytes) } catch { throw .data("\(option) \(path): \(error)") }
    }

    /// A token source holding its first access token. A key that cannot sign is 65; a refusal from
    /// the token endpoint (`invalid_grant`, with Google's description) 1; no answer 69.
    static func accessTokens(_ account: ServiceAccount, tls: TLSConfiguration, timeout: Duration) throws(CLIError) -> FCMAccessTokenSource {
        let source: FCMAccessTokenSource
        do { source = try FCMAccessTokenSource(account: account, tls: tls, timeout: timeout) } catch {
            throw .data("--service-account: \(error)")
        }
        do { try source.fetchNow() } catch {
            throw CLIError(error.isTransient ? .unavailable : .refused, "no FCM access token: \(error)")
        }
        return source
    }

    /// Sends one message `body` to `--fcm-host` for `account`'s project, within `--timeout` in all
    /// (the token exchange included); no answer at all is 69.
    /// `failedAt`: where a thrown error came from, "accessToken" (the token endpoint) or "connection"
    /// (no answer from FCM), for a caller that must say so in its own output (`send --json`).
    static func perform(body: [UInt8], account: ServiceAccount, _ invocation: Invocation,
                        failedAt: (String) -> Void = { _ in }) throws(CLIError) -> ConnectionPool.Answer {
        let (host, port) = try APNsConnectionOptions.hostPort(invocation.string("--fcm-host") ?? "\(FCMEndpoint.host):443", option: "--fcm-host")
        let tls = try APNsConnectionOptions.tls(invocation)
        let serverName = try APNsConnectionOptions.serverName(invocation)
        let timeout = Duration.seconds(try invocation.double("--timeout", in: 0.1...3600) ?? 30)
        let end = MonotonicInstant.now() + timeout
        let source: FCMAccessTokenSource
        do { source = try accessTokens(account, tls: tls, timeout: timeout) } catch {
            failedAt("accessToken")
            throw error
        }
        failedAt("connection")
        var configuration = PoolConfiguration(host: host, port: port, tls: tls)
        configuration.serverName = serverName
        configuration.provider = .fcm(source)
        let request = ConnectionPool.Request(method: .post, path: FCMEndpoint.sendPath(projectID: account.projectID),
                                             headers: [HeaderField("content-type", "application/json")], body: body)
        let left = end - MonotonicInstant.now()
        guard left > .zero else { throw CLIError(.unavailable, "\(host):\(port): no time left within --timeout after the access token") }
        let answer: ConnectionPool.Answer
        do { answer = try ConnectionPool.perform([request], configuration: configuration, timeout: left)[0] } catch {
            throw CLIError(.unavailable, "cannot start a connection: \(error)")
        }
        if let failure = answer.failure { throw CLIError(.unavailable, "\(host):\(port): \(failure)") }
        return answer
    }

    /// The built-in simulator's FCM side for `bench --provider fcm`: its service account, trusted
    /// through its CA, with a first access token.
    static func simulatorAccessTokens(_ simulator: ChildSimulator, tls: TLSConfiguration) throws(CLIError) -> FCMAccessTokenSource {
        guard let path = simulator.fcmServiceAccountFile else { throw CLIError(.software, "the simulator wrote no FCM service account") }
        return try accessTokens(try serviceAccount(file: path, option: "the simulator's service account"), tls: tls, timeout: .seconds(30))
    }
}
