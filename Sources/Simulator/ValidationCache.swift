import APNs

/// Remembers the verdict on a push's headers and body: a fan-out sends one body to many tokens, and
/// parsing a ≈900-byte payload for every push would make the simulator, not the sender, the thing a
/// benchmark measures. `apns-id` and `authorization` are left out of the key (they vary per push and
/// are checked separately).
struct ValidationCache {
    struct Key: Hashable {
        let headers: [String]
        let body: [UInt8]
    }

    private var verdicts: [Key: RequestRules.Refusal?] = [:]
    static let capacity = 256

    /// The cached verdict (nil refusal = valid), computing and storing it on a miss.
    mutating func verdict(headers: [(name: String, value: String)], body: [UInt8],
                          compute: () -> RequestRules.Refusal?) -> RequestRules.Refusal? {
        var parts: [String] = []
        parts.reserveCapacity(headers.count * 2)
        for header in headers where header.name != HeaderName.apnsID && header.name != "authorization" {
            parts.append(header.name)
            parts.append(header.value)
        }
        let key = Key(headers: parts, body: body)
        if let known = verdicts[key] { return known }
        let verdict = compute()
        if verdicts.count >= Self.capacity { verdicts.removeAll(keepingCapacity: true) }
        verdicts[key] = verdict
        return verdict
    }
}
