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

    /// Key indices in ascending key order.
    func sortedIndices() -> [Int] {
        var order = Array(0..<count)
        bytes.withUnsafeBufferPointer { data in
            starts.withUnsafeBufferPointer { starts in
                order.withUnsafeMutableBufferPointer { order in
                    order.sort { a, b in
                        let aStart = starts[a], aCount = starts[a + 1] - aStart
                        let bStart = starts[b], bCount = starts[b + 1] - bStart
                        let order = memcmp(data.baseAddress! + aStart, data.baseAddress! + bStart, min(aCount, bCount))
                        return order != 0 ? order < 0 : aCount < bCount
                    }
                }
            }
        }
        return order
    }

    /// Whether two keys at neighbouring positions of `order` are equal.
    func hasDuplicates(in order: [Int]) -> Bool {
        zip(order, order.dropFirst()).contains { key($0) == key($1) }
    }
}
