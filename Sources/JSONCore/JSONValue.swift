/// A parsed JSON value. Objects keep their members in document order, so a value that is written
/// back out keeps the key order its author chose.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number exactly as written (e.g. "5.90", "1e3"), so re-encoding never changes its format.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([(key: String, value: JSONValue)])

    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.key == $1.key && $0.value == $1.value }
        default: return false
        }
    }

    /// The member named `key` of an object (the first one if the key repeats), or nil.
    public subscript(key: String) -> JSONValue? {
        guard case let .object(members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    public var stringValue: String? { if case let .string(s) = self { return s } else { return nil } }
    public var boolValue: Bool? { if case let .bool(b) = self { return b } else { return nil } }
    public var arrayValue: [JSONValue]? { if case let .array(a) = self { return a } else { return nil } }
    public var objectMembers: [(key: String, value: JSONValue)]? {
        if case let .object(m) = self { return m } else { return nil }
    }
    public var isObject: Bool { if case .object = self { return true } else { return false } }

    /// The number as an Int64 if it is an integer literal that fits (no fraction, no exponent).
    public var int64Value: Int64? {
        guard case let .number(text) = self else { return nil }
        return Int64(text)
    }

    /// The number as a Double (any JSON number).
    public var doubleValue: Double? {
        guard case let .number(text) = self else { return nil }
        return Double(text)
    }

    /// The compact JSON text of this value.
    public var jsonText: String {
        var writer = JSONWriter()
        writer.value(self)
        return writer.string
    }
}
