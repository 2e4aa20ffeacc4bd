/// Comparing secrets (the admin token, an installation secret's hash) without letting the time
/// taken show how many leading bytes matched.
public enum ConstantTime {
    /// Whether `given` equals `expected`; the time depends on `expected`'s length only.
    public static func equal(_ given: [UInt8], _ expected: [UInt8]) -> Bool {
        var difference = UInt8(given.count == expected.count ? 0 : 1)
        for index in 0..<expected.count { difference |= expected[index] ^ (index < given.count ? given[index] : 0) }
        return difference == 0
    }
}
