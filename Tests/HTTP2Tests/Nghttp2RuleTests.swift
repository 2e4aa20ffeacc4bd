#if canImport(Glibc)
import Glibc
#endif
@testable import Crypto
import Testing

/// The rule of `Nghttp2` (Sources/HTTP2/Nghttp2Check.swift): every nghttp2 call in Sources/HTTP2 that
/// returns a status hands it to `Nghttp2.check` (or a `precondition`) on its line or the statement's
/// next two lines. Calls that return no status code are listed here by name; `nghttp2_submit_request`
/// returns a stream id (or an error) that its callers test.
@Suite struct Nghttp2RuleTests {
    static let returnsNoStatus: Set<String> = [
        "nghttp2_session_del", "nghttp2_session_set_user_data", "nghttp2_session_want_read", "nghttp2_session_want_write",
        "nghttp2_session_get_remote_settings", "nghttp2_session_get_stream_user_data", "nghttp2_version", "nghttp2_strerror",
        "nghttp2_submit_request",
    ]
    /// C structs built with their initialiser, not calls.
    static let types: Set<String> = ["nghttp2_nv", "nghttp2_settings_entry", "nghttp2_data_provider", "nghttp2_mem"]

    @Test("Every nghttp2 return code in Sources/HTTP2 goes through Nghttp2.check")
    func everyReturnCodeIsChecked() throws {
        let file = #filePath
        let tests = file[..<file.lastIndex(of: "/")!]
        let root = String(tests[..<tests.lastIndex(of: "/")!].dropLast("/Tests".count))
        let sources = root + "/Sources/HTTP2"
        var unchecked: [String] = []
        var callsSeen = 0
        for name in try swiftFiles(in: sources) where name != "Nghttp2Check.swift" {
            let lines = String(decoding: try FileBytes.read(sources + "/" + name), as: UTF8.self)
                .split(separator: "\n", omittingEmptySubsequences: false)
                .map { (line: Substring) -> Substring in line.firstRange(of: "//").map { line[..<$0.lowerBound] } ?? line[...] }
            for (number, code) in lines.enumerated() {
                for call in calls(in: code) where !Self.types.contains(call) && !call.hasPrefix("nghttp2_session_callbacks_set_") {
                    callsSeen += 1
                    let statement = lines[number..<min(lines.count, number + 3)]
                    let checked = statement.contains { $0.contains("Nghttp2.check(") || $0.contains("precondition(") }
                    if !checked && !Self.returnsNoStatus.contains(call) { unchecked.append("\(name):\(number + 1): \(call)") }
                }
            }
        }
        #expect(callsSeen > 15, "the scan found too few nghttp2_ calls; is \(sources) right?")
        #expect(unchecked == [], "unchecked nghttp2 return codes:\n\(unchecked.joined(separator: "\n"))")
    }

    /// The names of `nghttp2_…(` calls on a line.
    private func calls(in line: Substring) -> [String] {
        var out: [String] = []
        var rest = line
        while let start = rest.firstRange(of: "nghttp2_") {
            let tail = rest[start.lowerBound...]
            let name = tail.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            let after = tail.dropFirst(name.count)
            if after.first == "(" { out.append(String(name)) }
            rest = after
        }
        return out
    }

    private func swiftFiles(in directory: String) throws -> [String] {
        guard let handle = opendir(directory) else { throw RuleError.cannotList(directory) }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
            if name.hasSuffix(".swift") { names.append(name) }
        }
        return names.sorted()
    }

    enum RuleError: Error { case cannotList(String) }
}
