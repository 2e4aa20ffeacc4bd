#if canImport(Glibc)
import Glibc
#endif
import TokenStore

/// Where `tokens import` writes. Into an existing store: the store itself, each chunk committed
/// durably, so a killed import keeps what it committed. Into a new one (no store at `--store` yet):
/// a working copy in `DIR/.importing`, committed without an fsync per chunk, and at the end the
/// store itself written from it in key order, packed and synced (`TokenStore.backup`), the working
/// copy removed. A fresh store of random tokens built chunk by chunk is about three times the size
/// of its packed copy (pages split half full) and every chunk's fsync rewrote pages all over it,
/// so 10M tokens took twice as long per million as 1M, and the first event after the import paid
/// for the uncompacted pages (issue 25). A killed fresh import leaves no store, only the working
/// copy, which the next import removes.
struct ImportTarget {
    let store: TokenStore
    let directory: String
    /// The working copy (nil: the import writes the store itself).
    let working: String?

    /// Whether each chunk is committed with an fsync (only into an existing store).
    var durable: Bool { working == nil }

    static func open(_ invocation: Invocation) throws(CLIError) -> ImportTarget {
        let directory = StoreAccess.directory(invocation)
        guard access(directory + "/data.mdb", F_OK) != 0 else {
            return ImportTarget(store: try StoreAccess.open(invocation, readOnly: false, create: true), directory: directory, working: nil)
        }
        try StoreAccess.requireOwner(directory, command: invocation.commandPath)
        let working = directory + "/.importing"
        try removeWorkingCopy(working)
        do {
            let store = try TokenStore(directory: working, options: TokenStore.Options(readOnly: false, create: true, maximumBatch: 500_000))
            return ImportTarget(store: store, directory: directory, working: working)
        } catch {
            try? removeWorkingCopy(working)
            throw naming(StoreAccess.cliError(error), directory: directory, working: working)
        }
    }

    /// `error` as the user should read it: about the store they named, not its working copy.
    func naming(_ error: CLIError) -> CLIError {
        working.map { Self.naming(error, directory: directory, working: $0) } ?? error
    }

    private static func naming(_ error: CLIError, directory: String, working: String) -> CLIError {
        CLIError(error.code, error.message.replacing(working, with: directory))
    }

    /// The import is complete: a fresh store is written from the working copy (then removed).
    func finish() throws(CLIError) {
        guard let working else { return }
        do { try StoreAccess.run { () throws(StoreError) in try store.backup(to: directory) } } catch { throw naming(error) }
        store.close()
        try Self.removeWorkingCopy(working)
    }

    /// The import failed: the working copy goes (the store never existed).
    func abandon() {
        store.close()
        if let working { try? Self.removeWorkingCopy(working) }
    }

    /// A store directory holds these files; anything else in a working copy is not ours to remove.
    private static func removeWorkingCopy(_ path: String) throws(CLIError) {
        for name in ["data.mdb", "lock.mdb", "writer.lock"] where unlink(path + "/" + name) != 0 && errno != ENOENT {
            throw CLIError(.cantCreate, "cannot remove \(path)/\(name), the working copy of an earlier import: \(String(cString: strerror(errno)))")
        }
        if rmdir(path) != 0 && errno != ENOENT {
            throw CLIError(.cantCreate, "cannot remove \(path), the working copy of an earlier import: \(String(cString: strerror(errno))); remove it and import again")
        }
    }
}
