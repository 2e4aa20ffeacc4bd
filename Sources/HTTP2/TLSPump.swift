import Crypto
import IO

/// Moves bytes between a TLS stream and an HTTP/2 session — the read and flush loop that the
/// client and the server connection share. Reads drain the socket into the session; flushes move
/// the session's coalesced output into TLS writes, repeating a write that would block with the
/// same length (mbedTLS loses data otherwise, INTEROP.md).
struct TLSPump: ~Copyable {
    enum Outcome: Equatable {
        /// Progress made; for reads, whether any byte arrived (a sign of life of the peer).
        case ok(receivedBytes: Bool)
        /// The peer closed the connection.
        case closed
        case failed(TransportError)
    }

    private let input: UnsafeMutablePointer<UInt8>
    private let inputCapacity = 64 * 1024
    /// Length of a TLS write that returned WANT_WRITE: the retry must use the same length.
    private(set) var blockedWriteLength = 0

    init() { input = .allocate(capacity: inputCapacity) }
    deinit { input.deallocate() }

    /// Whether output is waiting for the socket to become writable.
    var isBlocked: Bool { blockedWriteLength > 0 }

    /// Feeds everything the socket has to `session`; stops at EAGAIN, end of stream or an error.
    /// `stillOpen` is asked after each chunk: the session's delegate may close the connection.
    mutating func read(from tls: TLSStream, into session: HTTP2Session, stillOpen: () -> Bool) -> Outcome {
        var received = false
        while true {
            switch tls.read(into: input, capacity: inputCapacity) {
            case let .bytes(count):
                received = true
                do throws(TransportError) {
                    try session.receive(input, count: count)
                } catch {
                    return .failed(error)
                }
                if !stillOpen() { return .ok(receivedBytes: true) }
            case .wouldBlock:
                return .ok(receivedBytes: received)
            case .closed:
                return .closed
            case let .failed(error):
                return .failed(.tls(error.message))
            }
        }
    }

    /// Writes the session's frames (≈16 KB per TLS write) until none are left or the socket is full.
    mutating func flush(_ session: HTTP2Session, to tls: TLSStream) -> Outcome {
        while true {
            if blockedWriteLength == 0 {
                do throws(TransportError) { try session.produce() } catch { return .failed(error) }
            }
            let pending = session.pendingOutput
            if pending.isEmpty { return .ok(receivedBytes: false) }
            let length = blockedWriteLength > 0 ? blockedWriteLength : min(pending.count, 16 * 1024)
            switch tls.write(pending.baseAddress!.assumingMemoryBound(to: UInt8.self), count: length) {
            case let .bytes(written):
                blockedWriteLength = 0
                session.consumeOutput(written)
            case .wouldBlock:
                blockedWriteLength = length
                return .ok(receivedBytes: false)
            case .closed:
                return .closed
            case let .failed(error):
                return .failed(.tls(error.message))
            }
        }
    }

    /// Forgets a blocked write (the connection is being torn down).
    mutating func reset() { blockedWriteLength = 0 }
}
