/// Immutable bytes at a stable address, shared by every request that sends them (one rendered
/// payload per fan-out group). A request holds a reference, never a copy.
public final class SharedBytes: @unchecked Sendable {
    // @unchecked: the bytes are written once in init and only read afterwards.
    /// Read by the connection's body provider, inside this package only.
    package let base: UnsafeMutablePointer<UInt8>
    public let count: Int

    public init<Bytes: Collection>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        count = bytes.count
        base = .allocate(capacity: max(1, count))
        _ = UnsafeMutableBufferPointer(start: base, count: count).initialize(from: bytes)
    }

    deinit { base.deallocate() }

}
