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
}
