#if canImport(Glibc)
import Glibc
#endif

/// A small file the kernel writes (/proc/self/status, /proc/self/stat, /proc/stat), read whole as
/// text: the one reader for the process facts the daemon reports. Nil when it cannot be opened.
public enum SystemFile {
    public static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count == 0 { break }
            bytes += chunk[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
