import APNs

/// Remembers the verdict on a push's headers and body: a fan-out sends one body to many tokens, and
/// parsing a ≈900-byte payload for every push would make the simulator, not the sender, the thing a
/// benchmark measures. `apns-id` and `authorization` are left out of the key (they vary per push and
/// are checked separately), so `compute` is given the headers without them: a verdict that depended
/// on them would be handed to later pushes whose own values differ.
struct ValidationCache {
    struct Key: Hashable {
        let headers: [String]
        let body: [UInt8]

        /// The body is hashed as one block of bytes (Array's own hashing feeds them one by one).
        func hash(into hasher: inout Hasher) {
            hasher.combine(headers)
            body.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }

    private var verdicts: [Key: RequestRules.Refusal?] = [:]
    static let capacity = 256

    /// The cached verdict (nil refusal = valid), computing and storing it on a miss from the
    /// headers that make up the key.
    mutating func verdict(headers: [(name: String, value: String)], body: [UInt8],
                          compute: ([(name: String, value: String)]) -> RequestRules.Refusal?) -> RequestRules.Refusal? {
        var parts: [String] = []
        parts.reserveCapacity(headers.count * 2)
        for header in headers where Self.isKeyed(header.name) {
            parts.append(header.name)
            parts.append(header.value)
        }
        let key = Key(headers: parts, body: body)
        if let known = verdicts[key] { return known }
        let verdict = compute(headers.filter { Self.isKeyed($0.name) })
        if verdicts.count >= Self.capacity { verdicts.removeAll(keepingCapacity: true) }
        verdicts[key] = verdict
        return verdict
    }

    private static func isKeyed(_ name: String) -> Bool { name != HeaderName.apnsID && name != "authorization" }
}
