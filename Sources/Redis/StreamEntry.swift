/// One stream entry: its id and its fields in order. An entry a consumer group still lists as
/// pending but that trimming removed from the stream comes back with no fields and `trimmed` set.
public struct StreamEntry: Sendable, Equatable {
    public struct Field: Sendable, Equatable {
        public let name: String
        public let value: [UInt8]
        public init(_ name: String, _ value: [UInt8]) { self.name = name; self.value = value }
        public init(_ name: String, _ text: String) { self.init(name, Array(text.utf8)) }
    }

    public let id: StreamID
    public let fields: [Field]
    public let trimmed: Bool

    public init(id: StreamID, fields: [Field], trimmed: Bool = false) {
        self.id = id
        self.fields = fields
        self.trimmed = trimmed
    }

    /// The first field called `name`.
    public subscript(name: String) -> [UInt8]? { fields.first { $0.name == name }?.value }
    /// The first field called `name`, as UTF-8 text.
    public func text(_ name: String) -> String? { self[name].map { String(decoding: $0, as: UTF8.self) } }
}

/// How entries come in replies (XREAD, XREADGROUP, XRANGE, XAUTOCLAIM).
extension RedisConnection {
    /// Entries from a reply: [[id, [name, value, …]], …]; a nil field list is a trimmed entry.
    static func entries(_ reply: RedisReply, command: String) throws(RedisError) -> [StreamEntry] {
        if reply.isNil { return [] }
        guard case let .array(items) = reply else { throw .unexpectedReply(command: command, reply: reply.description) }
        var entries: [StreamEntry] = []
        entries.reserveCapacity(items.count)
        for item in items {
            guard case let .array(pair) = item, pair.count == 2, let idText = pair[0].text, let id = StreamID(idText) else {
                throw .unexpectedReply(command: command, reply: item.description)
            }
            switch pair[1] {
            case .nil: entries.append(StreamEntry(id: id, fields: [], trimmed: true))
            case let .array(values) where values.count % 2 == 0:
                var fields: [StreamEntry.Field] = []
                fields.reserveCapacity(values.count / 2)
                for index in stride(from: 0, to: values.count, by: 2) {
                    guard let name = values[index].text, case let .bytes(value) = values[index + 1] else {
                        throw .unexpectedReply(command: command, reply: item.description)
                    }
                    fields.append(StreamEntry.Field(name, value))
                }
                entries.append(StreamEntry(id: id, fields: fields))
            default: throw .unexpectedReply(command: command, reply: item.description)
            }
        }
        return entries
    }
}
