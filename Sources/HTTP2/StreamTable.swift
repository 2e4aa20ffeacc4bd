import IO

/// The state of one request stream, kept in a reused slot.
struct StreamSlot {
    var active = false
    var generation: UInt32 = 0
    var streamID: Int32 = 0
    var deadline = MonotonicInstant.distantFuture
    var sent = false
    var status = 0
    var body: SharedBytes?
    /// A body of this stream alone (`ClientConnection.submit(…copying:…)`), in a buffer the slot
    /// keeps and reuses; `hasCopiedBody` says whether the stream sends it.
    var copiedBody: [UInt8] = []
    var hasCopiedBody = false
    var bodyOffset = 0
    var responseHeaders: [UInt8] = []
    var responseBody: [UInt8] = []

    mutating func begin(deadline: MonotonicInstant, body: SharedBytes?, streamID: Int32) {
        active = true
        self.deadline = deadline
        self.body = body
        self.streamID = streamID
        hasCopiedBody = false
        bodyOffset = 0
        sent = false
        status = 0
        responseHeaders.removeAll(keepingCapacity: true)
        responseBody.removeAll(keepingCapacity: true)
    }
}

/// A client connection's streams in flight: the one table of them. A stream's index here is the
/// handle its submitter gets back and keys its own data by (the sender keeps the push of each
/// handle), and nghttp2 carries index + generation as the stream's user data, so a late callback
/// for a reused slot is recognised and ignored. Nothing is allocated per request: slots, their
/// response buffers and the free list are reused.
struct StreamTable {
    private(set) var slots: [StreamSlot]
    private var free: [Int32]
    private(set) var active = 0

    init(capacity: Int) {
        slots = Array(repeating: StreamSlot(), count: max(1, capacity))
        free = (0..<Int32(max(1, capacity))).reversed().map { $0 }
    }

    var capacity: Int { slots.count }

    /// A free slot's index, with its generation bumped (nil when all are in use).
    mutating func reserve() -> Int? {
        guard let index = free.popLast() else { return nil }
        slots[Int(index)].generation &+= 1
        return Int(index)
    }

    /// Gives back a reserved slot that was never started.
    mutating func unreserve(_ index: Int) { free.append(Int32(index)) }

    mutating func begin(_ index: Int, deadline: MonotonicInstant, body: SharedBytes?, streamID: Int32) {
        slots[index].begin(deadline: deadline, body: body, streamID: streamID)
        active += 1
    }

    /// Gives stream `index` a body of its own: `bytes` copied into the slot's kept buffer.
    mutating func copyBody(_ index: Int, from bytes: UnsafeRawBufferPointer) {
        slots[index].copiedBody.removeAll(keepingCapacity: true)
        slots[index].copiedBody.append(contentsOf: bytes)
        slots[index].hasCopiedBody = true
    }

    /// Copies the next at most `length` bytes of stream `index`'s body (shared or its own) into
    /// `buffer`: how many, and whether the body is now all read.
    mutating func readBody(_ index: Int, into buffer: UnsafeMutablePointer<UInt8>, length: Int) -> (count: Int, end: Bool) {
        let offset = slots[index].bodyOffset
        let count: Int
        let total: Int
        if slots[index].hasCopiedBody {
            total = slots[index].copiedBody.count
            count = min(length, total - offset)
            if count > 0 { slots[index].copiedBody.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + offset, count: count) } }
        } else if let body = slots[index].body {
            total = body.count
            count = min(length, total - offset)
            buffer.update(from: body.base + offset, count: count)
        } else {
            return (0, true)
        }
        slots[index].bodyOffset += count
        return (count, slots[index].bodyOffset == total)
    }

    /// Ends a stream: the slot is free again and late callbacks for it no longer match.
    mutating func release(_ index: Int) {
        slots[index].active = false
        slots[index].body = nil
        slots[index].generation &+= 1
        free.append(Int32(index))
        active -= 1
    }

    subscript(index: Int) -> StreamSlot {
        get { slots[index] }
        _modify { yield &slots[index] }
    }

    /// nghttp2's per-stream user data: slot index + 1 in the low 24 bits, the slot's generation above.
    func userData(_ index: Int) -> UnsafeMutableRawPointer {
        UnsafeMutableRawPointer(bitPattern: UInt(index + 1) | UInt(slots[index].generation) << 24)!
    }

    /// The active slot `userData` points at, if it is still the stream it was made for.
    func index(for userData: UnsafeMutableRawPointer?) -> Int? {
        guard let userData else { return nil }
        let bits = UInt(bitPattern: userData)
        let index = Int(bits & 0xFF_FFFF) - 1
        guard index >= 0, index < slots.count, slots[index].active,
              slots[index].generation == UInt32(truncatingIfNeeded: bits >> 24) else { return nil }
        return index
    }

    /// The earliest deadline of an active stream.
    var earliestDeadline: MonotonicInstant? {
        var earliest: MonotonicInstant?
        for slot in slots where slot.active && slot.deadline < (earliest ?? .distantFuture) { earliest = slot.deadline }
        return earliest
    }
}
