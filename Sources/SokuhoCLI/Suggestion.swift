/// "Did you mean": the declared name closest to a mistyped one (`sokuho serv`, `--check-confg`),
/// so a usage error names the fix instead of only pointing at `--help`.
enum Suggestion {
    /// The one name within a small edit distance of `word` (at most 2, and less than a third of
    /// its length, so a short word is not "corrected" into an unrelated one); nil when none is, or
    /// when two are equally close.
    static func closest(to word: String, among names: [String]) -> String? {
        let typed = Array(word.lowercased().utf8)
        let limit = min(2, max(1, typed.count / 3))
        var best: (name: String, distance: Int)?
        var tied = false
        for name in names {
            let distance = editDistance(typed, Array(name.lowercased().utf8))
            guard distance <= limit else { continue }
            if let current = best, distance == current.distance { tied = true; continue }
            if best == nil || distance < best!.distance { best = (name, distance); tied = false }
        }
        return tied ? nil : best?.name
    }

    /// " (did you mean 'NAME'?)", or nothing.
    static func hint(for word: String, among names: [String]) -> String {
        closest(to: word, among: names).map { " (did you mean '\($0)'?)" } ?? ""
    }

    /// Optimal string alignment distance: insertions, deletions, substitutions and swaps of two
    /// neighbours (the usual typo) each cost 1.
    static func editDistance(_ a: [UInt8], _ b: [UInt8]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { current[j] = min(current[j], previous2[j - 2] + 1) }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}
