import CLMDB
import Glibc

/// Everything that can go wrong with a token store, phrased for the operator who has to fix it.
/// Callers map the case to an exit code; `description` names the store directory and the fix.
public enum StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The directory or its data file does not exist (and was not to be created).
    case missing(path: String)
    /// The file is not an LMDB database, or is LMDB but not a Sokuho store.
    case foreign(path: String, detail: String)
    /// A Sokuho store whose pages or records do not decode.
    case corrupt(path: String, detail: String)
    /// The store was written by a newer Sokuho with a schema this build does not know.
    case newerSchema(path: String, found: UInt32, supported: UInt32)
    /// The directory or a file in it cannot be written (or read) by this user.
    case permissionDenied(path: String)
    /// The disk (or the file system's quota) is full.
    case diskFull(path: String)
    /// Another process kept the store's write lock for longer than the allowed wait.
    case locked(path: String, waitedSeconds: Double)
    /// A directory or file cannot be created (an existing file in the way, a bad path).
    case cannotCreate(path: String, reason: String)
    /// A value the caller passed is invalid (an empty id, a too long topic, an unknown field).
    case invalid(String)
    /// Any other system or LMDB error, with LMDB's own text.
    case io(path: String, code: Int32, message: String)

    public var description: String {
        switch self {
        case let .missing(path):
            return "no token store at \(path); import tokens first (sokuho tokens import) or pass --store DIR"
        case let .foreign(path, detail):
            return "\(path) is not a Sokuho token store (\(detail)); point --store at a Sokuho store directory"
        case let .corrupt(path, detail):
            return "the token store at \(path) is corrupt (\(detail)); restore it from a backup (sokuho store backup)"
        case let .newerSchema(path, found, supported):
            return "the token store at \(path) has schema version \(found), but this Sokuho reads up to \(supported); upgrade Sokuho"
        case let .permissionDenied(path):
            return "permission denied for the token store at \(path); run as the store's owner or fix the directory's permissions"
        case let .diskFull(path):
            return "the disk holding the token store at \(path) is full; free space and retry (nothing of the failed batch was written)"
        case let .locked(path, waited):
            return "another process has been writing to the token store at \(path) for \(Int(waited.rounded())) s; retry when it finishes"
        case let .cannotCreate(path, reason):
            return "cannot create \(path): \(reason)"
        case let .invalid(message):
            return message
        case let .io(path, code, message):
            return "token store at \(path): \(message) (error \(code))"
        }
    }

    /// LMDB reports a page write the disk cut short as EIO, not ENOSPC (`mdb_page_flush`: a short
    /// `pwritev` without an errno; measured with an import and a backup into a full tmpfs): when the
    /// file system holding `path` has under 1 MiB left, that EIO is a full disk, and saying so tells
    /// the operator the fix.
    static func fileSystemIsFull(at path: String) -> Bool {
        var space = statvfs()
        return statvfs(path, &space) == 0 && UInt64(space.f_bavail) * UInt64(space.f_frsize) < 1 << 20
    }

    /// The error for an LMDB or errno return code `code` from an operation on the store at `path`.
    static func from(_ code: Int32, path: String) -> StoreError {
        switch code {
        case EACCES, EPERM, EROFS: return .permissionDenied(path: path)
        case ENOSPC, EDQUOT: return .diskFull(path: path)
        case EIO where fileSystemIsFull(at: path): return .diskFull(path: path)
        case ENOENT: return .missing(path: path)
        case MDB_INVALID, MDB_VERSION_MISMATCH, MDB_INCOMPATIBLE:
            return .foreign(path: path, detail: String(cString: mdb_strerror(code)))
        case MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_PANIC:
            return .corrupt(path: path, detail: String(cString: mdb_strerror(code)))
        default: return .io(path: path, code: code, message: String(cString: mdb_strerror(code)))
        }
    }
}
