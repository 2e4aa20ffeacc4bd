#if canImport(Glibc)
import Glibc
#endif
import IO
import TokenStore

/// Where `tokens import` writes.
///
/// Into an existing store: the store itself, each chunk committed durably, so a killed import
/// keeps what it committed.
///
/// Into a new one (no store at `--store` yet), nothing is written at `--store` until the end,
/// and then the whole store at once, packed in key order and synced: a killed import leaves no
/// store, only its working files under `DIR/.importing`, which the next import removes. A store
/// built by inserting random tokens into one B-tree costs more per token the larger it grows
/// (10M took twice as long per million as 1M: every chunk touched pages all over a tree that no
/// longer fit the caches, and left them half full), so a file is imported in **parts**: each
/// `partLines` lines (never cutting an installation's adjacent lines apart) go into a small
/// store of their own, `DIR/.importing/part-N`, without an fsync per chunk, and at the end
/// `TokenStore.merge` writes the store from all parts in one pass (issue 25). Parts that share
/// an installation or a token (the same one on lines a part apart) do not commute; the merge
/// says so and the file is imported again into one working copy, `DIR/.importing`, then
/// written packed (`TokenStore.backup`), the same store a slower way. Input that cannot be
/// read twice (stdin, a pipe) goes into one working copy from the start.
final class ImportTarget {
    enum Layout: Equatable {
        /// The existing store itself.
        case store
        /// One working copy at `DIR/.importing`.
        case workingCopy
        /// Parts at `DIR/.importing/part-N`.
        case parts
    }

    /// Where chunks are written now (the current part, with `.parts`).
    private(set) var store: TokenStore
    let directory: String
    let layout: Layout
    /// The parts written so far, the current one last.
    private var parts: [String] = []

    /// Lines per part (`--part-lines`): a part's B-tree stays small enough that inserting into it
    /// costs the same per token however large the import (see the README's bench-scale table).
    static let defaultPartLines = 250_000

    /// Whether each chunk is committed with an fsync (only into an existing store).
    var durable: Bool { layout == .store }

    private var working: String { directory + "/.importing" }

    private init(store: TokenStore, directory: String, layout: Layout, parts: [String]) {
        self.store = store
        self.directory = directory
        self.layout = layout
        self.parts = parts
    }

    /// The target for `invocation`'s `--store`; `parted`: a new store may be imported in parts.
    static func open(_ invocation: Invocation, parted: Bool) throws(CLIError) -> ImportTarget {
        let directory = StoreAccess.directory(invocation)
        guard access(directory + "/data.mdb", F_OK) != 0 else {
            return ImportTarget(store: try StoreAccess.open(invocation, readOnly: false, create: true), directory: directory,
                                layout: .store, parts: [])
        }
        try StoreAccess.requireOwner(directory, command: invocation.commandPath)
        let working = directory + "/.importing"
        try removeWorkingFiles(working)
        let first = parted ? working + "/part-1" : working
        do {
            return ImportTarget(store: try openWorking(first), directory: directory, layout: parted ? .parts : .workingCopy,
                                parts: parted ? [first] : [])
        } catch {
            try? removeWorkingFiles(working)
            throw naming(StoreAccess.cliError(error), directory: directory, working: working)
        }
    }

    private static func openWorking(_ path: String) throws(StoreError) -> TokenStore {
        try TokenStore(directory: path, options: TokenStore.Options(readOnly: false, create: true, maximumBatch: 500_000))
    }

    /// The current part is complete (every chunk of it committed): later chunks go into a new one.
    func startNextPart() throws(CLIError) {
        precondition(layout == .parts)
        store.close()
        let next = working + "/part-\(parts.count + 1)"
        do { store = try Self.openWorking(next) } catch { throw naming(StoreAccess.cliError(error)) }
        parts.append(next)
    }

    /// `error` as the user should read it: about the store they named, not its working files.
    func naming(_ error: CLIError) -> CLIError {
        layout == .store ? error : Self.naming(error, directory: directory, working: working)
    }

    /// A part (`working/part-N`) and the working copy both read as the store.
    private static func naming(_ error: CLIError, directory: String, working: String) -> CLIError {
        var message = Substring(error.message)
        var named = ""
        while let found = message.firstRange(of: working) {
            named += message[..<found.lowerBound]
            named += directory
            message = message[found.upperBound...]
            if message.hasPrefix("/part-"), message.dropFirst(6).first?.isNumber == true {
                message = message.dropFirst(6).drop(while: \.isNumber)
            }
        }
        return CLIError(error.code, named + message)
    }

    /// The import is complete: a new store is written from the working copy or the parts, and
    /// the working files go. False: the parts overlap, nothing was written, the working files are
    /// gone; import again with `parted` false.
    func finish() throws(CLIError) -> Bool {
        switch layout {
        case .store:
            return true
        case .workingCopy:
            do { try StoreAccess.run { () throws(StoreError) in try store.backup(to: directory) } } catch { throw naming(error) }
            store.close()
        case .parts:
            store.close()
            let result: StoreMergeResult
            do {
                result = try StoreAccess.run { () throws(StoreError) in try TokenStore.merge(parts: parts, into: directory) }
            } catch {
                throw naming(error)
            }
            if case .overlapping = result {
                try Self.removeWorkingFiles(working)
                return false
            }
        }
        try Self.removeWorkingFiles(working)
        return true
    }

    /// The import failed: the working files go (the store never existed).
    func abandon() {
        store.close()
        if layout != .store { try? Self.removeWorkingFiles(working) }
    }

    /// Removes the working copy at `path` and the parts in it (`part-N`, store files only:
    /// anything else there is not ours to remove, and makes the removal fail naming it).
    private static func removeWorkingFiles(_ path: String) throws(CLIError) {
        let parts = (DirectoryListing.names(path) ?? []).filter { $0.hasPrefix("part-") && $0.dropFirst(5).allSatisfy(\.isNumber) }
        for part in parts { try removeStoreFiles(path + "/" + part) }
        try removeStoreFiles(path)
    }

    private static func removeStoreFiles(_ path: String) throws(CLIError) {
        for name in ["data.mdb", "lock.mdb", "writer.lock"] where unlink(path + "/" + name) != 0 && errno != ENOENT {
            throw CLIError(.cantCreate, "cannot remove \(path)/\(name), left by an earlier import: \(String(cString: strerror(errno)))")
        }
        if rmdir(path) != 0 && errno != ENOENT {
            throw CLIError(.cantCreate, "cannot remove \(path), left by an earlier import: \(String(cString: strerror(errno))); remove it and import again")
        }
    }
}
