import Glibc

/// A fresh directory under /tmp for one test (tests run in parallel), removed with its contents
/// when the test ends.
final class TemporaryDirectory {
    let root: String

    init() {
        var template = Array("/tmp/sokuho-crypto-XXXXXX".utf8CString)
        root = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    deinit {
        // Flat directory: remove each entry, then the directory.
        if let dir = opendir(root) {
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name != "." && name != ".." { unlink(root + "/" + name) }
            }
            closedir(dir)
        }
        rmdir(root)
    }

    func path(_ name: String) -> String { root + "/" + name }

    /// Writes `text` to the file `name` in this directory and returns its path.
    func write(_ text: String, to name: String) -> String { write(bytes: Array(text.utf8), to: name) }

    /// Writes `bytes` to the file `name` in this directory and returns its path.
    func write(bytes: [UInt8], to name: String) -> String {
        let target = path(name)
        let fd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        precondition(fd >= 0, "cannot create \(target)")
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        close(fd)
        return target
    }

    func readText(_ path: String) -> String { String(decoding: readBytes(path), as: UTF8.self) }

    /// The file's bytes as they are (a signature is not text).
    func readBytes(_ path: String) -> [UInt8] {
        guard let file = fopen(path, "r") else { return [] }
        defer { fclose(file) }
        var out = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count == 0 { break }
            out.append(contentsOf: buffer[0..<count])
        }
        return out
    }
}
