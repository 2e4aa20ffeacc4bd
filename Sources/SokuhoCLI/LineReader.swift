#if canImport(Glibc)
import Glibc
#endif

/// Reads newline-separated lines from a file, stdin, or bytes in memory, in 1 MiB chunks, and
/// hands each line (without "\n" or a trailing "\r") to the caller with its 1-based number.
/// Memory stays at one chunk plus the longest line.
struct LineReader {
    enum Source {
        case descriptor(Int32)
        case bytes([UInt8])
    }

    let source: Source

    /// The longest line read from a file or stdin (a token line is a few hundred bytes).
    static let maximumLineBytes = 16 << 20

    /// Opens `path` ("-" is stdin). A missing or unreadable file is exit 66.
    static func open(_ path: String) throws(CLIError) -> LineReader {
        if path == "-" { return LineReader(source: .descriptor(0)) }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw CLIError(.noInput, "cannot read \(path): \(reason)")
        }
        return LineReader(source: .descriptor(fd))
    }

    /// Whether `rewind` can start a second pass: a regular file this reader opened. Stdin and
    /// pipes (`/dev/stdin`, `<(zcat …)`) cannot be read twice: `slurp` them first.
    var isRewindable: Bool {
        switch source {
        case .bytes: return true
        case let .descriptor(fd):
            var status = stat()
            return fd != 0 && fstat(fd, &status) == 0 && status.st_mode & S_IFMT == S_IFREG
        }
    }

    /// Goes back to the start of a rewindable input for a second pass.
    func rewind() throws(CLIError) {
        if case let .descriptor(fd) = source, lseek(fd, 0, SEEK_SET) < 0 {
            throw CLIError(.ioError, "reading the input again failed: \(String(cString: strerror(errno)))")
        }
    }

    /// Reads the input to its end into memory (for a second pass); the caller closes this one.
    func slurp() throws(CLIError) -> LineReader {
        guard case let .descriptor(fd) = source else { return self }
        var all: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw CLIError(.ioError, "reading the input failed: \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            all.append(contentsOf: chunk[..<count])
        }
        return LineReader(source: .bytes(all))
    }

    func close() {
        if case let .descriptor(fd) = source, fd > 2 { _ = Glibc.close(fd) }
    }

    /// Calls `body(number, line)` for every line.
    func forEachLine(_ body: (Int, UnsafeRawBufferPointer) throws(CLIError) -> Void) throws(CLIError) {
        var number = 0
        func emit(_ line: UnsafeRawBufferPointer) throws(CLIError) {
            number += 1
            var end = line.count
            if end > 0 && line[end - 1] == 0x0d { end -= 1 }
            try body(number, UnsafeRawBufferPointer(rebasing: line[..<end]))
        }
        switch source {
        case let .bytes(all):
            let result = all.withUnsafeBytes { buffer in
                Result { () throws(CLIError) in try LineReader.split(buffer, final: true, emit) }
            }
            _ = try result.get()
        case let .descriptor(fd):
            var buffer = [UInt8](repeating: 0, count: 1 << 20)
            var filled = 0
            while true {
                if filled == buffer.count {
                    // The unfinished line fills the buffer: grow it, up to a bound, so a file
                    // without newlines (/dev/zero, a disk image) is refused instead of read into
                    // memory until it runs out.
                    guard buffer.count < LineReader.maximumLineBytes else {
                        throw CLIError.data("line \(number + 1) is longer than \(LineReader.maximumLineBytes >> 20) MiB; each line must be one JSON object (is this the right file?)")
                    }
                    buffer.append(contentsOf: [UInt8](repeating: 0, count: buffer.count))
                }
                let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, $0.count - filled) }
                if count < 0 && errno == EINTR { continue }
                guard count >= 0 else { throw CLIError(.ioError, "reading the input failed: \(String(cString: strerror(errno)))") }
                filled += count
                let final = count == 0
                let result = buffer.withUnsafeBytes { all in
                    Result { () throws(CLIError) in try LineReader.split(UnsafeRawBufferPointer(rebasing: all[..<filled]), final: final, emit) }
                }
                let consumed = try result.get()
                if final { return }
                buffer.withUnsafeMutableBytes { raw in
                    if consumed > 0 { raw.baseAddress!.copyMemory(from: raw.baseAddress! + consumed, byteCount: filled - consumed) }
                }
                filled -= consumed
            }
        }
    }

    /// Emits the complete lines of `buffer` (and the unterminated rest when `final`); returns
    /// how many bytes it consumed.
    private static func split(_ buffer: UnsafeRawBufferPointer, final: Bool,
                              _ emit: (UnsafeRawBufferPointer) throws(CLIError) -> Void) throws(CLIError) -> Int {
        var start = 0
        while start < buffer.count {
            guard let newline = memchr(buffer.baseAddress! + start, 0x0a, buffer.count - start) else { break }
            let end = buffer.baseAddress!.distance(to: UnsafeRawPointer(newline))
            try emit(UnsafeRawBufferPointer(rebasing: buffer[start..<end]))
            start = end + 1
        }
        if final && start < buffer.count {
            try emit(UnsafeRawBufferPointer(rebasing: buffer[start...]))
            start = buffer.count
        }
        return start
    }
}
