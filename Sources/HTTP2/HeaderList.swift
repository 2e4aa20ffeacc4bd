import CNghttp2

/// A fixed list of request headers (lowercase names) kept as `nghttp2_nv` entries over stable
/// storage, built once per fan-out group and reused by every request of the group.
public final class HeaderList: @unchecked Sendable {
    // @unchecked: written once in init, only read afterwards.
    package let entries: UnsafeMutablePointer<nghttp2_nv>
    public let count: Int
    private let storage: UnsafeMutablePointer<UInt8>
    public let pairs: [(name: String, value: String)]

    public init(_ pairs: [(name: String, value: String)]) {
        self.pairs = pairs
        count = pairs.count
        let total = pairs.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count }
        storage = .allocate(capacity: max(1, total))
        entries = .allocate(capacity: max(1, pairs.count))
        var offset = 0
        for (index, pair) in pairs.enumerated() {
            let name = Array(pair.name.utf8), value = Array(pair.value.utf8)
            (storage + offset).initialize(from: name, count: name.count)
            (storage + offset + name.count).initialize(from: value, count: value.count)
            entries[index] = nghttp2_nv(name: storage + offset, value: storage + offset + name.count,
                                        namelen: name.count, valuelen: value.count,
                                        flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            offset += name.count + value.count
        }
    }

    public convenience init(_ pairs: KeyValuePairs<String, String>) {
        self.init(pairs.map { (name: $0.key, value: $0.value) })
    }

    deinit {
        storage.deallocate()
        entries.deallocate()
    }

    /// The entries as nghttp2 takes them, for a caller that submits frames itself (tests of the session).
    package func withEntries<T>(_ body: (UnsafePointer<nghttp2_nv>, Int) throws -> T) rethrows -> T {
        try body(UnsafePointer(entries), count)
    }

}
