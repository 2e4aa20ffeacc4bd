#if canImport(Glibc)
import Glibc
#endif

/// A small secret file's content (at most 4 KiB) without surrounding white space: the admin
/// token, the cluster's Redis password.
public enum SecretFile {
    public static func read(_ path: String) throws(ServiceError) -> [UInt8] {
        guard let file = fopen(path, "r") else { throw ServiceError(String(cString: strerror(errno))) }
        defer { fclose(file) }
        var bytes = [UInt8](repeating: 0, count: 4096)
        let count = fread(&bytes, 1, bytes.count, file)
        return Array(bytes[..<count].drop { $0 <= 0x20 }.reversed().drop { $0 <= 0x20 }.reversed())
    }

    /// A whole secret file of at most `limit` bytes, as it is: a service account's JSON.
    public static func contents(_ path: String, limit: Int = 1 << 20) throws(ServiceError) -> [UInt8] {
        guard let file = fopen(path, "r") else { throw ServiceError(String(cString: strerror(errno))) }
        defer { fclose(file) }
        var bytes = [UInt8](repeating: 0, count: limit + 1)
        let count = fread(&bytes, 1, bytes.count, file)
        guard count <= limit else { throw ServiceError("larger than \(limit) bytes: not a service account file") }
        return Array(bytes[..<count])
    }
}
