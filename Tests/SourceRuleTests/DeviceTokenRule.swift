/// What `DefinedOnceRuleTests` looks for to keep the one token type (`Vocabulary/DeviceToken.swift`)
/// the only one: the old layout had a hex-string type with its bound in APNs, a 13-word tuple in
/// Sender, the store's `8...` range and the simulator's own minimum. Each of those lines matches.
enum DeviceTokenRule {
    static let integerWords = ["UInt8", "UInt16", "UInt32", "UInt64", "Int8", "Int16", "Int32", "Int64"]

    /// A tuple of two or more words of one integer type: inline storage (`(UInt64, UInt64, …)`).
    static func declaresInlineStorage(_ line: Substring) -> Bool {
        integerWords.contains { word in line.contains("\(word), \(word)") }
    }

    /// A `let`/`var` whose name speaks of a token's length — "token" with "byte", "digit" or
    /// "length", or "ByteCount"/"HexDigits" on their own (`maximumByteCount`) — given a value that
    /// holds a number (`= 100`, `= 8...`, `= 2 * …`). A constant defined from `DeviceToken`'s own has
    /// no number and is not a second bound.
    static func declaresLengthBound(_ line: Substring) -> Bool {
        guard let name = declaredName(line), let value = line.split(separator: "=", maxSplits: 1).dropFirst().first else { return false }
        let lower = name.lowercased()
        let lengthWord = lower.contains("byte") || lower.contains("digit") || lower.contains("length")
        let tokenLength = (lower.contains("token") && lengthWord) || lower.contains("bytecount") || lower.contains("hexdigits")
        return tokenLength && value.contains(where: \.isNumber)
    }

    /// The name after `let ` or `var `, up to `:`, `=` or a space.
    static func declaredName(_ line: Substring) -> Substring? {
        for keyword in ["let ", "var "] {
            guard let range = line.firstRange(of: keyword) else { continue }
            let name = line[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            if !name.isEmpty { return name }
        }
        return nil
    }
}
