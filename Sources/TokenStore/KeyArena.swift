import Glibc

/// Many byte keys back to back in one buffer, sortable in LMDB's key order (bytewise, a prefix
/// first) without reference counting: sorting an array of `[UInt8]` retained and released each
/// key on every move, which cost more than the B-tree inserts it was meant to speed up.
struct KeyArena {
    private(set) var bytes: [UInt8] = []
    private var starts: [Int] = []

    init(capacity: Int, averageKeyLength: Int) {
        bytes.reserveCapacity(capacity * averageKeyLength)
        starts.reserveCapacity(capacity + 1)
        starts.append(0)
    }

    var count: Int { starts.count - 1 }

    mutating func append<Bytes: Sequence>(_ key: Bytes) where Bytes.Element == UInt8 {
        bytes.append(contentsOf: key)
        starts.append(bytes.count)
    }

    /// Appends two parts as one key (e.g. a topic key and its duplicate).
    mutating func append(_ first: [UInt8], _ second: [UInt8]) {
        bytes.append(contentsOf: first)
        bytes.append(contentsOf: second)
        starts.append(bytes.count)
    }

    func key(_ index: Int) -> ArraySlice<UInt8> { bytes[starts[index]..<starts[index + 1]] }

    /// Key indices in ascending key order. Keys of one batch share long prefixes (the app, the
    /// topic), so the comparison skips the common prefix and first compares the next 8 bytes as
    /// one big-endian integer; only ties fall back to `memcmp`.
    func sortedIndices() -> [Int] {
        var order = Array(0..<count)
        let shared = commonPrefixLength()
        bytes.withUnsafeBufferPointer { data in
            starts.withUnsafeBufferPointer { starts in
                let base = data.baseAddress!
                // The 8 bytes after the shared prefix, zero-padded, as a sortable integer.
                let prefixes: [UInt64] = (0..<count).map { index in
                    let start = starts[index] + shared
                    let available = min(8, starts[index + 1] - start)
                    var value: UInt64 = 0
                    for offset in 0..<8 { value = value << 8 | (offset < available ? UInt64(base[start + offset]) : 0) }
                    return value
                }
                prefixes.withUnsafeBufferPointer { prefixes in
                    order.withUnsafeMutableBufferPointer { order in
                        order.sort { a, b in
                            if prefixes[a] != prefixes[b] { return prefixes[a] < prefixes[b] }
                            let aStart = starts[a], aCount = starts[a + 1] - aStart
                            let bStart = starts[b], bCount = starts[b + 1] - bStart
                            let order = memcmp(base + aStart, base + bStart, min(aCount, bCount))
                            return order != 0 ? order < 0 : aCount < bCount
                        }
                    }
                }
            }
        }
        return order
    }

    /// The length of the prefix all keys share.
    private func commonPrefixLength() -> Int {
        guard count > 1 else { return 0 }
        var length = starts[1] - starts[0]
        for index in 1..<count where length > 0 {
            let start = starts[index]
            length = min(length, starts[index + 1] - start)
            var same = 0
            while same < length && bytes[same] == bytes[start + same] { same += 1 }
            length = same
        }
        return length
    }

    /// For each key, a number shared exactly by the equal keys (`order` is `sortedIndices()`).
    func groups(in order: [Int]) -> [Int] {
        var groups = [Int](repeating: 0, count: count)
        bytes.withUnsafeBufferPointer { data in
            var group = 0
            for position in order.indices {
                if position > 0 {
                    let a = order[position - 1], b = order[position]
                    let aCount = starts[a + 1] - starts[a]
                    let equal = aCount == starts[b + 1] - starts[b]
                        && memcmp(data.baseAddress! + starts[a], data.baseAddress! + starts[b], aCount) == 0
                    if !equal { group += 1 }
                }
                groups[order[position]] = group
            }
        }
        return groups
    }
}
