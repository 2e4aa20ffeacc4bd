#if canImport(Glibc)
import Glibc
#endif
import CNghttp2

/// The memory nghttp2 uses for one connection: blocks of a few size classes kept on free lists
/// and reused, so the steady state of a fan-out (streams opened and closed by the thousand)
/// allocates nothing from the system. nghttp2 otherwise mallocs about 12 times per request (stream
/// objects, header copies, HPACK buffers), measured with valgrind.
///
/// Confined to the connection's loop thread, like the session itself: no locks. Larger blocks go
/// to the system allocator. Freed blocks are kept until the allocator goes (bounded by the peak
/// number of streams in flight).
final class SessionAllocator {
    /// Payload sizes of the classes; a request for n bytes gets the smallest class ≥ n.
    private static let classSizes = [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    /// Every block starts with a 16-byte header (class index, requested size), keeping the payload
    /// 16-byte aligned as malloc's is.
    private static let header = 16

    private var freeLists: [UnsafeMutableRawPointer?] = Array(repeating: nil, count: classSizes.count)
    let mem: UnsafeMutablePointer<nghttp2_mem>

    init() {
        mem = .allocate(capacity: 1)
        mem.initialize(to: nghttp2_mem(
            mem_user_data: nil,
            malloc: { size, user in SessionAllocator.from(user).allocate(size) },
            free: { pointer, user in SessionAllocator.from(user).release(pointer) },
            calloc: { count, size, user in
                let total = count.multipliedReportingOverflow(by: size)
                guard !total.overflow, let pointer = SessionAllocator.from(user).allocate(total.partialValue) else { return nil }
                memset(pointer, 0, total.partialValue)
                return pointer
            },
            realloc: { pointer, size, user in SessionAllocator.from(user).reallocate(pointer, size) }))
        mem.pointee.mem_user_data = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit {
        for var head in freeLists {
            while let block = head {
                head = (block + Self.header).load(as: UnsafeMutableRawPointer?.self)
                free(block)
            }
        }
        mem.deallocate()
    }

    private static func from(_ user: UnsafeMutableRawPointer?) -> SessionAllocator {
        Unmanaged<SessionAllocator>.fromOpaque(user!).takeUnretainedValue()
    }

    private static func classIndex(for size: Int) -> Int {
        var index = 0
        while index < classSizes.count && classSizes[index] < size { index += 1 }
        return index  // == classSizes.count: too large for a class
    }

    func allocate(_ size: Int) -> UnsafeMutableRawPointer? {
        let index = Self.classIndex(for: max(size, 1))
        let block: UnsafeMutableRawPointer
        if index < Self.classSizes.count {
            if let reused = freeLists[index] {
                freeLists[index] = (reused + Self.header).load(as: UnsafeMutableRawPointer?.self)
                block = reused
            } else {
                guard let fresh = malloc(Self.header + Self.classSizes[index]) else { return nil }
                block = fresh
            }
        } else {
            guard let fresh = malloc(Self.header + size) else { return nil }
            block = fresh
        }
        block.storeBytes(of: index, as: Int.self)
        block.storeBytes(of: size, toByteOffset: 8, as: Int.self)
        return block + Self.header
    }

    func release(_ pointer: UnsafeMutableRawPointer?) {
        guard let pointer else { return }
        let block = pointer - Self.header
        let index = block.load(as: Int.self)
        if index < Self.classSizes.count {
            (block + Self.header).storeBytes(of: freeLists[index], as: UnsafeMutableRawPointer?.self)
            freeLists[index] = block
        } else {
            free(block)
        }
    }

    func reallocate(_ pointer: UnsafeMutableRawPointer?, _ size: Int) -> UnsafeMutableRawPointer? {
        guard let pointer else { return allocate(size) }
        let block = pointer - Self.header
        let index = block.load(as: Int.self)
        let oldSize = block.load(fromByteOffset: 8, as: Int.self)
        if index < Self.classSizes.count && size <= Self.classSizes[index] {
            block.storeBytes(of: size, toByteOffset: 8, as: Int.self)
            return pointer
        }
        guard let grown = allocate(size) else { return nil }
        grown.copyMemory(from: pointer, byteCount: min(oldSize, size))
        release(pointer)
        return grown
    }
}
