#if canImport(Glibc)
import Glibc
#endif
import TokenStore

/// The `--store DIR` option every store command takes, opening the store, and turning a
/// `StoreError` into the exit code a script acts on.
enum StoreAccess {
    static let defaultDirectory = "/var/lib/sokuho"

    static let option = OptionSpec("--store", value: "DIR", help: "the token store directory (default \(defaultDirectory))",
                                   environment: "SOKUHO_STORE")

    static func directory(_ invocation: Invocation) -> String {
        invocation.string("--store") ?? defaultDirectory
    }

    /// Opens the store named by `--store`; only `create` (an import) makes a new one.
    static func open(_ invocation: Invocation, readOnly: Bool, create: Bool = false) throws(CLIError) -> TokenStore {
        do {
            let options = TokenStore.Options(readOnly: readOnly, create: create, maximumBatch: 500_000)
            return try TokenStore(directory: directory(invocation), options: options)
        } catch {
            throw cliError(error)
        }
    }

    /// Runs `body` and maps a store error to its exit code.
    static func run<T>(_ body: () throws(StoreError) -> T) throws(CLIError) -> T {
        do { return try body() } catch { throw cliError(error) }
    }

    static func cliError(_ error: StoreError) -> CLIError {
        let code: ExitCode
        switch error {
        case .missing: code = .noInput
        case .foreign, .corrupt, .newerSchema: code = .config
        case .permissionDenied: code = .noPermission
        case .diskFull, .io: code = .ioError
        case .locked: code = .tempFail
        case .cannotCreate: code = .cantCreate
        case .invalid: code = .dataError
        }
        return CLIError(code, error.description)
    }

    /// Milliseconds since 1970, the store's clock.
    static func nowMilliseconds() -> UInt64 { TokenLineParser.realtimeMilliseconds() }
}
