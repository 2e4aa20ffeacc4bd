import Glibc

/// Whole-file reads and writes with POSIX calls (no Foundation), reporting errno as text so callers
/// can word their own error.
package enum FileBytes {
    package enum Failure: Error {
        case missing
        case failed(String)
        case tooLarge
    }

    /// The contents of the regular file at `path`; more than `limit` bytes is `tooLarge` (a key
    /// path pointing at /dev/zero or a disk image must not read until memory runs out).
    package static func read(_ path: String, limit: Int = .max) throws(Failure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw errno == ENOENT ? .missing : .failed(errnoText()) }
        defer { close(fd) }
        var out = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .failed(errnoText())
            }
            if count == 0 { return out }
            out.append(contentsOf: chunk[0..<count])
            if out.count > limit { throw .tooLarge }
        }
    }

    /// Replaces the file at `path` with `bytes`, with permissions `mode` (e.g. 0o600 for a key)
    /// even when the file already existed with others.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t) throws(Failure) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode)
        guard fd >= 0 else { throw .failed(errnoText()) }
        defer { close(fd) }
        guard fchmod(fd, mode) == 0 else { throw .failed(errnoText()) }
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0 {
                if errno == EINTR { continue }
                throw .failed(errnoText())
            }
            offset += count
        }
    }

    /// Reads a key file, mapping failures to `CryptoError`: `missing` when there is no file,
    /// `keyFileUnreadable` otherwise.
    /// A key is a few hundred bytes: more than 1 MiB is not one (`tooLarge`).
    static func readKey(_ path: String, ifMissing missing: CryptoError, ifTooLarge tooLarge: CryptoError) throws(CryptoError) -> [UInt8] {
        do throws(Failure) {
            return try read(path, limit: 1 << 20)
        } catch {
            switch error {
            case .missing: throw missing
            case let .failed(reason): throw .keyFileUnreadable(path: path, reason: reason)
            case .tooLarge: throw tooLarge
            }
        }
    }

    /// Writes a PEM text file, mapping failures to `CryptoError.fileWriteFailed`.
    static func writePEM(_ pem: String, to path: String, mode: mode_t) throws(CryptoError) {
        do throws(Failure) {
            try write(Array(pem.utf8), to: path, mode: mode)
        } catch {
            switch error {
            case .missing: throw .fileWriteFailed(path: path, reason: "No such file or directory")
            case let .failed(reason): throw .fileWriteFailed(path: path, reason: reason)
            case .tooLarge: throw .fileWriteFailed(path: path, reason: "too large")  // reads only
            }
        }
    }

    private static func errnoText() -> String { String(cString: strerror(errno)) }
}
