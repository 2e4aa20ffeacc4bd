import Testing

/// Issue 21: no source file over 300 lines, unless it says at its top why it must be longer (its
/// first 15 lines name "300 lines"). A file that grows past the bound without a reason fails here.
@Suite struct FileLengthRuleTests {
    static let bound = 300

    @Test func noSourceFileIsLongerThan300LinesWithoutSayingWhy() throws {
        let sources = SourceTree.root + "/Sources"
        var unexplained: [String] = []
        for file in try SourceTree.swiftFiles(under: sources) {
            let lines = try SourceTree.read(sources + "/" + file).split(separator: "\n", omittingEmptySubsequences: false)
            let count = lines.last == "" ? lines.count - 1 : lines.count
            guard count > Self.bound else { continue }
            if !lines.prefix(15).contains(where: { $0.contains("300 lines") }) { unexplained.append("\(file) (\(count))") }
        }
        #expect(unexplained == [], "over \(Self.bound) lines without a reason at the top: \(unexplained.joined(separator: ", ")); split it, or say why it cannot be")
    }
}
