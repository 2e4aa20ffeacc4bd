#if canImport(Glibc)
import Glibc
#endif
import Testing

/// The package's source files as the rules read them: listed with opendir (no Foundation), read
/// whole, and split into lines with `//` comments cut off, so a rule looks at code, not prose.
enum SourceTree {
    /// The package root: this file is `<root>/Tests/SourceRuleTests/SourceTree.swift`.
    static let root: String = {
        let file = #filePath
        let tests = file[..<file.lastIndex(of: "/")!]
        return String(tests[..<tests.lastIndex(of: "/")!].dropLast("/Tests".count))
    }()

    /// The `.swift` files directly in `directory`, sorted by name.
    static func swiftFiles(in directory: String) throws -> [String] {
        try entries(in: directory).filter { $0.name.hasSuffix(".swift") }.map(\.name)
    }

    /// Every `.swift` file under `directory`, as paths relative to it (`Vocabulary/Hex.swift`), sorted.
    static func swiftFiles(under directory: String) throws -> [String] {
        var out: [String] = []
        for entry in try entries(in: directory) {
            if entry.isDirectory {
                out += try swiftFiles(under: directory + "/" + entry.name).map { entry.name + "/" + $0 }
            } else if entry.name.hasSuffix(".swift") {
                out.append(entry.name)
            }
        }
        return out.sorted()
    }

    static func read(_ path: String) throws -> String {
        let file = try #require(fopen(path, "r"), "cannot open \(path)")
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBufferPointer { fread($0.baseAddress, 1, $0.count, file) }
            if n == 0 { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }

    /// The lines of `text` with everything from `//` on cut off.
    static func code(_ text: String) -> [Substring] {
        text.split(separator: "\n", omittingEmptySubsequences: false)
            .map { (line: Substring) -> Substring in line.firstRange(of: "//").map { line[..<$0.lowerBound] } ?? line[...] }
    }

    private static func entries(in directory: String) throws -> [(name: String, isDirectory: Bool)] {
        let dir = try #require(opendir(directory), "cannot open \(directory)")
        defer { closedir(dir) }
        var out: [(name: String, isDirectory: Bool)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            out.append((name, entry.pointee.d_type == UInt8(DT_DIR)))
        }
        return out.sorted { $0.name < $1.name }
    }
}
