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
        if !readOnly { try requireOwner(directory(invocation), command: invocation.commandPath) }
        do {
            let options = TokenStore.Options(readOnly: readOnly, create: create, maximumBatch: 500_000)
            return try TokenStore(directory: directory(invocation), options: options)
        } catch {
            throw cliError(error)
        }
    }

    /// Refuses to write into a store directory another user owns. Files a write creates (the lock
    /// file, a grown map, a migrated schema) would belong to this user, and the owner (the daemon's
    /// user) could then not open its own store. Root is not exempt: a root-run import is exactly the
    /// mistake. A directory that does not exist yet is fine (it is created as this user's).
    static func requireOwner(_ directory: String, command: String, effectiveUID: uid_t = geteuid()) throws(CLIError) {
        var info = stat()
        guard stat(directory, &info) == 0, info.st_uid != effectiveUID else { return }
        let owner = userName(info.st_uid)
        let me = userName(effectiveUID)
        let fix = owner.map { "Run as that user: runuser -u \($0) -- \(command) … (as root; or sudo -u \($0))" } ?? "Run as uid \(info.st_uid) (setpriv --reuid=\(info.st_uid) \(command) …) or chown the directory"
        let runner = me.map { "'\($0)' (uid \(effectiveUID))" } ?? "uid \(effectiveUID)"
        throw CLIError(.noPermission,
                       "permission denied for the token store at \(directory): it belongs to \(owner.map { "'\($0)' (uid \(info.st_uid))" } ?? "uid \(info.st_uid)"), "
                       + "not to \(runner) running this command; files written now would be \(me ?? "uid \(effectiveUID)")'s "
                       + "and the store's owner (the daemon) could no longer open them. \(fix)")
    }

    /// The name of `uid` from the password database, or nil.
    private static func userName(_ uid: uid_t) -> String? {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return nil }
        return String(cString: name)
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
}
