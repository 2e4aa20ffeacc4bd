/// An error that names the field at fault: what a strict object reader's refusals are made of.
/// Each caller keeps its own error type (`EventError` for events and API bodies,
/// `ConfigurationError` for `sokuho serve`'s file); both conform, so the reader is written once.
public protocol JSONFieldError: Error {
    init(field: String, _ message: String)
}

/// One member an object read by table may have: its key, and how its value is read into `Target`.
public struct JSONMember<Target, Failure: JSONFieldError>: Sendable {
    public let key: String
    public let read: @Sendable (JSONValue, String, inout Target) throws(Failure) -> Void

    public init(_ key: String, _ read: @escaping @Sendable (JSONValue, String, inout Target) throws(Failure) -> Void) {
        self.key = key
        self.read = read
    }
}

/// The one strict reader of JSON objects: each member is read once, and a repeated member or one
/// nobody reads is refused by its path — a typo such as "deadlineSecond" or "keepaliveSecond" must
/// fail loudly, not silently leave the default in force. Fields are named by their path from the
/// root (`groups[2].level`, `apps[1].keyFile`); `root` names the whole object ("event", "body",
/// "configuration").
///
/// Two ways in, because the callers' messages are part of the interface and must not change:
/// - pulled (`optional`/`required`, then `rejectUnknown`): events and API bodies. Repeated members
///   are refused up front; unknown ones after every read, listing the keys read, sorted.
/// - by table (`read(_:path:root:what:members:into:)`): the configuration. Members are taken in
///   document order, each refused as repeated or unknown (listing the table's keys) or read there.
public struct JSONObjectFields<Failure: JSONFieldError> {
    private let members: [(key: String, value: JSONValue)]
    private let path: String
    private var read: Set<String> = []

    /// The object at `path` ("" for the root).
    public init(_ value: JSONValue, path: String, root: String) throws(Failure) {
        members = try Self.members(of: value, path: path, root: root)
        self.path = path
        var seen: Set<String> = []
        for member in members where !seen.insert(member.key).inserted {
            throw Self.repeated(Self.field(member.key, in: path))
        }
    }

    /// Parses `bytes` and reads the object at its root.
    public init(json bytes: [UInt8], root: String) throws(Failure) {
        let value: JSONValue
        do { value = try JSONParser.parse(bytes) } catch { throw Failure(field: root, "is not valid JSON: \(error)") }
        try self.init(value, path: "", root: root)
    }

    /// The member `key` read by `parse` (with its field path), or nil when absent.
    public mutating func optional<T>(_ key: String, _ parse: (JSONValue, String) throws(Failure) -> T) throws(Failure) -> T? {
        read.insert(key)
        guard let value = members.first(where: { $0.key == key })?.value else { return nil }
        return try parse(value, Self.field(key, in: path))
    }

    public mutating func required<T>(_ key: String, _ parse: (JSONValue, String) throws(Failure) -> T) throws(Failure) -> T {
        guard let value = try optional(key, parse) else { throw Failure(field: Self.field(key, in: path), "is required") }
        return value
    }

    /// Refuses the first member no `optional`/`required` asked for.
    public func rejectUnknown() throws(Failure) {
        if let unknown = members.first(where: { !read.contains($0.key) }) {
            throw Self.unknown(Self.field(unknown.key, in: path), of: nil, known: read.sorted())
        }
    }

    /// Reads `value` against `table` in document order; `what` names the object in messages.
    public static func read<Target>(_ value: JSONValue, path: String, root: String, what: String,
                                    members table: [JSONMember<Target, Failure>], into target: inout Target) throws(Failure) {
        var seen: Set<String> = []
        for member in try members(of: value, path: path, root: root) {
            let field = field(member.key, in: path)
            guard seen.insert(member.key).inserted else { throw repeated(field) }
            guard let entry = table.first(where: { $0.key == member.key }) else {
                throw unknown(field, of: what, known: table.map(\.key))
            }
            try entry.read(member.value, field, &target)
        }
    }

    private static func members(of value: JSONValue, path: String, root: String) throws(Failure) -> [(key: String, value: JSONValue)] {
        guard let members = value.objectMembers else { throw Failure(field: path.isEmpty ? root : path, "must be a JSON object") }
        return members
    }

    private static func field(_ key: String, in path: String) -> String { path.isEmpty ? key : path + "." + key }

    private static func repeated(_ field: String) -> Failure { Failure(field: field, "appears twice; give it once") }

    private static func unknown(_ field: String, of what: String?, known: [String]) -> Failure {
        Failure(field: field, "is not a field \(what.map { "of " + $0 } ?? "here"); check its spelling (known: \(known.joined(separator: ", ")))")
    }
}
