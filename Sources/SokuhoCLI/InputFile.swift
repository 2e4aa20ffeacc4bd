#if canImport(Glibc)
import Glibc
#endif

/// Reads a whole input file, or standard input for "-", with errors that name the option.
enum InputFile {
    static func read(_ path: String, option: String, limit: Int = 64 * 1024 * 1024) throws(CLIError) -> [UInt8] {
        let fd: Int32 = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let code: ExitCode = errno == ENOENT ? .noInput : (errno == EACCES ? .noPermission : .noInput)
            throw CLIError(code, "\(option) \(path): \(String(cString: strerror(errno)))")
        }
        defer { if fd != 0 { close(fd) } }
        // open(2) succeeds on a directory and read(2) then fails with EISDIR: say so up front, as
        // an input that cannot be read (66), not an I/O error part-way (74).
        var status = stat()
        if fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFDIR {
            throw CLIError(.noInput, "\(option) \(path) is a directory; give a file")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CLIError(.ioError, "\(option) \(path): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes.append(contentsOf: chunk[0..<n])
            if bytes.count > limit { throw CLIError(.dataError, "\(option) \(path) is larger than \(limit) bytes") }
        }
        return bytes
    }
}
