#if canImport(Glibc)
import Glibc
#endif

/// The names in a directory, read whole before the caller acts on them (so removing entries
/// while walking them cannot skip any): the one `readdir` loop of the project.
public enum DirectoryListing {
    /// Every entry's name but `.` and `..`, in the directory's order; nil when `path` cannot be
    /// opened as a directory (it does not exist, is not one, or may not be read).
    public static func names(_ path: String) -> [String]? {
        guard let directory = opendir(path) else { return nil }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
