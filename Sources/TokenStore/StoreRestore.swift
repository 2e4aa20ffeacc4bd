import Glibc
import Vocabulary

/// A backup copied into a staging directory inside the store directory and checked there, ready
/// to be moved into place (`TokenStore.stageRestore`, then `install`). Staging inside the store
/// directory keeps the final step one `rename` on one file system, and needs no write access to
/// the directory's parent (`/var/lib` belongs to root; the service user owns only its store).
public struct StagedRestore: Sendable {
    /// The store directory the backup is for.
    public let directory: String
    /// `DIR/restore-<pid>-<ms>`: holds the checked copy's `data.mdb`.
    public let staging: String
    /// The full check of the copy (always consistent: an inconsistent copy is not staged).
    public let report: StoreCheckReport

    /// Moves the checked copy into place as `DIR/data.mdb`. An existing `data.mdb` is kept as
    /// `DIR/data.mdb.old-<suffix>` when `keepOldAs` is given, else replaced. The old `lock.mdb`
    /// goes (it describes the old file's readers; LMDB creates a fresh one at the next open).
    /// Only call when no process has the store open (`TokenStore.isLive`), or, for the standby,
    /// after closing this process's own `TokenStore` of it.
    /// Returns the path the old store was kept at, if any.
    @discardableResult
    public func install(keepOldAs suffix: String?) throws(StoreError) -> String? {
        let target = directory + "/data.mdb"
        var kept: String?
        if let suffix, access(target, F_OK) == 0 {
            let old = target + ".old-" + suffix
            guard rename(target, old) == 0 else { throw StoreError.from(errno, path: old) }
            kept = old
        }
        if unlink(directory + "/lock.mdb") != 0 && errno != ENOENT { throw StoreError.from(errno, path: directory + "/lock.mdb") }
        guard rename(staging + "/data.mdb", target) == 0 else { throw StoreError.from(errno, path: target) }
        _ = Glibc.rmdir(staging)
        return kept
    }

    /// Removes the staging directory (a restore that is not installed after all).
    public func discard() { TokenStore.removeStaging(staging) }
}

extension TokenStore {
    /// The data file of a backup: `PATH/data.mdb` when `PATH` is a directory (what `sokuho store
    /// backup` writes), else `PATH` itself (a shipped `data.mdb` under any name).
    public static func backupFile(_ path: String) -> String {
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { return path + "/data.mdb" }
        return path
    }

    /// Whether some process, this one included, has the store in `directory` open: LMDB holds a
    /// shared `fcntl` lock on the first byte of `lock.mdb` for as long as an environment is open.
    /// Asked with an open-file-description lock (`F_OFD_GETLK`), which conflicts with those locks
    /// even within this process and takes nothing.
    public static func isLive(_ directory: String) -> Bool {
        let fd = open(directory + "/lock.mdb", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false } // no lock file: nobody has opened it since it was made
        defer { _ = Glibc.close(fd) }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        guard fcntl(fd, 36 /* F_OFD_GETLK, not exported by Glibc's module */, &lock) == 0 else { return true } // cannot tell: say live, refuse
        return lock.l_type != Int16(F_UNLCK)
    }

    /// Copies the backup `backup` (a backup directory or its `data.mdb`) into a new staging
    /// directory inside `directory`, opens it (migrating an older schema) and runs the full
    /// `check()` on it. Nothing in `directory` but the staging directory is touched; on any
    /// failure the staging directory is removed again. A damaged backup is `StoreError.corrupt`
    /// or `.foreign` with the backup's path.
    public static func stageRestore(backup: String, into directory: String) throws(StoreError) -> StagedRestore {
        let source = backupFile(backup)
        guard access(source, R_OK) == 0 else {
            throw errno == EACCES ? StoreError.permissionDenied(path: source) : StoreError.missing(path: source)
        }
        try makeDirectory(directory)
        let staging = directory + "/restore-\(getpid())-\(WallClock.milliseconds())"
        guard mkdir(staging, 0o750) == 0 else { throw creationError(errno, path: staging) }
        do throws(StoreError) {
            try copyFile(source, to: staging + "/data.mdb")
            let report: StoreCheckReport
            do {
                let store = try TokenStore(directory: staging, options: Options(create: false))
                defer { store.close() }
                report = try store.check()
            } catch {
                throw Self.backupError(error, backup: source)
            }
            guard report.isConsistent else {
                throw StoreError.corrupt(path: source, detail: "the backup is inconsistent: " + report.problems.joined(separator: "; "))
            }
            // The copy's own lock files go: the installed store gets fresh ones.
            _ = unlink(staging + "/lock.mdb")
            _ = unlink(staging + "/writer.lock")
            return StagedRestore(directory: directory, staging: staging, report: report)
        } catch {
            removeStaging(staging)
            throw error
        }
    }

    /// Errors from opening the staged copy name the backup, not the staging directory.
    private static func backupError(_ error: StoreError, backup: String) -> StoreError {
        switch error {
        case let .corrupt(_, detail): return .corrupt(path: backup, detail: detail)
        case let .foreign(_, detail): return .corrupt(path: backup, detail: detail)
        case let .io(_, _, message): return .corrupt(path: backup, detail: message)
        default: return error
        }
    }

    static func removeStaging(_ staging: String) {
        for name in ["data.mdb", "lock.mdb", "writer.lock"] { _ = unlink(staging + "/" + name) }
        _ = Glibc.rmdir(staging)
    }

    /// Copies a file, then flushes it to the disk.
    static func copyFile(_ source: String, to destination: String) throws(StoreError) {
        let input = open(source, O_RDONLY | O_CLOEXEC)
        guard input >= 0 else { throw StoreError.from(errno, path: source) }
        defer { _ = Glibc.close(input) }
        let output = open(destination, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o640)
        guard output >= 0 else { throw creationError(errno, path: destination) }
        defer { _ = Glibc.close(output) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(input, $0.baseAddress, $0.count) }
            if count < 0 { if errno == EINTR { continue }; throw StoreError.from(errno, path: source) }
            if count == 0 { break }
            var written = 0
            while written < count {
                let result = buffer.withUnsafeBytes { Glibc.write(output, $0.baseAddress! + written, count - written) }
                if result < 0 { if errno == EINTR { continue }; throw StoreError.from(errno, path: destination) }
                written += result
            }
        }
        guard fsync(output) == 0 else { throw StoreError.from(errno, path: destination) }
    }
}
