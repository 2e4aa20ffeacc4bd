import JSONCore

/// One member a configuration object may have: its key, and how its value is read into `Target`.
struct JSONMember<Target>: Sendable {
    let key: String
    let read: @Sendable (JSONValue, String, inout Target) throws(ConfigurationError) -> Void

    init(_ key: String, _ read: @escaping @Sendable (JSONValue, String, inout Target) throws(ConfigurationError) -> Void) {
        self.key = key
        self.read = read
    }
}

/// Reads a JSON object strictly against a table of members: each member is read once, a repeated
/// member or one not in the table is refused by its path — a typo such as "keepaliveSecond" must
/// fail at start, not silently leave the default in force.
enum JSONObjectReading {
    static func read<Target>(_ value: JSONValue, path: String, what: String, members table: [JSONMember<Target>],
                             into target: inout Target) throws(ConfigurationError) {
        guard let members = value.objectMembers else {
            throw ConfigurationError(field: path.isEmpty ? "configuration" : path, "must be a JSON object")
        }
        var seen: Set<String> = []
        for member in members {
            let field = path.isEmpty ? member.key : path + "." + member.key
            guard seen.insert(member.key).inserted else { throw ConfigurationError(field: field, "appears twice; give it once") }
            guard let entry = table.first(where: { $0.key == member.key }) else {
                throw ConfigurationError(field: field, "is not a field of \(what); check its spelling (known: \(table.map(\.key).joined(separator: ", ")))")
            }
            try entry.read(member.value, field, &target)
        }
    }
}
