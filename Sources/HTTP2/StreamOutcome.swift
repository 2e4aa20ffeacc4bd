/// How a request stream ended without a usable response. The difference decides whether a resend
/// can duplicate a push (APNS.md §6, RFC 9113 §8.7).
public enum StreamFailure: Sendable, Equatable, CustomStringConvertible {
    /// Provably not processed: never sent, RST_STREAM(REFUSED_STREAM), or above a GOAWAY's
    /// last-stream-id. Safe to resend on another connection.
    case refused(String)
    /// May have been processed: the connection died without a GOAWAY covering the stream, or the
    /// server reset it with another code.
    case unknown(String)
    /// The request's deadline passed. `sent` says whether its HEADERS had left (then it may have
    /// been processed) or it was still queued (then it was not).
    case timedOut(sent: Bool)

    public var description: String {
        switch self {
        case let .refused(why): return "refused (\(why))"
        case let .unknown(why): return "unknown outcome (\(why))"
        case let .timedOut(sent): return sent ? "deadline passed after sending" : "deadline passed before sending"
        }
    }

    /// Whether the request certainly was not processed by the server.
    public var provablyUnprocessed: Bool {
        switch self {
        case .refused: return true
        case .unknown: return false
        case let .timedOut(sent): return !sent
        }
    }
}

/// A response as the connection received it, valid only during the delegate call (its bytes live
/// in the stream's reusable buffers; nothing is allocated until a caller asks for a String).
public struct ResponseView {
    public let status: Int
    /// Captured headers as "name\0value\0" pairs.
    let headerBytes: UnsafeBufferPointer<UInt8>
    public let body: UnsafeBufferPointer<UInt8>

    /// All captured headers (for diagnostics and tests).
    public var headers: [(name: String, value: String)] {
        let parts = headerBytes.split(separator: 0, omittingEmptySubsequences: false)
        var out: [(String, String)] = []
        var i = 0
        while i + 1 < parts.count {
            out.append((String(decoding: parts[i], as: UTF8.self), String(decoding: parts[i + 1], as: UTF8.self)))
            i += 2
        }
        return out
    }

    public var bodyBytes: [UInt8] { Array(body) }

    /// The value of the captured header `name` (lower case), or nil; allocates only the value found.
    public func header(_ name: String) -> String? {
        headerValue(name.utf8).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `Retry-After` in delta-seconds (RFC 9110 §10.2.3), without allocating. The HTTP-date form
    /// and anything unparsable read as absent: the caller then uses its own back-off.
    public var retryAfterSeconds: Int? {
        guard let value = headerValue("retry-after".utf8) else { return nil }
        var seconds = 0
        var digits = 0
        for byte in value where byte != UInt8(ascii: " ") {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), digits < 9 else { return nil }
            seconds = seconds * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
        }
        return digits > 0 ? seconds : nil
    }

    /// The bytes of the first captured header called `name`, in place.
    private func headerValue(_ name: String.UTF8View) -> Slice<UnsafeBufferPointer<UInt8>>? {
        var index = 0
        while index < headerBytes.count {
            guard let nameEnd = headerBytes[index...].firstIndex(of: 0) else { return nil }
            let valueStart = nameEnd + 1
            let valueEnd = headerBytes[valueStart...].firstIndex(of: 0) ?? headerBytes.count
            if headerBytes[index..<nameEnd].elementsEqual(name) { return headerBytes[valueStart..<valueEnd] }
            index = valueEnd + 1
        }
        return nil
    }
}
