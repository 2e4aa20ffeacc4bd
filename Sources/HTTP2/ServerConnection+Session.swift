import CNghttp2
import IO

/// The server connection's side of its session: requests assembled from frames, response bodies
/// handed to nghttp2, GOAWAY's refusal of later streams.
// MARK: Session events

extension ServerConnection: HTTP2SessionDelegate {
    package func sessionReadBody(streamID: Int32, source: UnsafeMutableRawPointer?, into buffer: UnsafeMutablePointer<UInt8>,
                                length: Int, endOfData: inout Bool) -> Int {
        guard var entry = outgoing[streamID] else {
            endOfData = true
            return 0
        }
        let count = min(length, entry.body.count - entry.offset)
        entry.body.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + entry.offset, count: count) }
        entry.offset += count
        if entry.offset == entry.body.count {
            endOfData = true
            outgoing[streamID] = nil
        } else {
            outgoing[streamID] = entry
        }
        return count
    }

    package func sessionBeganHeaders(streamID: Int32) { partial[streamID] = PartialRequest() }

    package func sessionReceivedHeader(streamID: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard partial[streamID] != nil else { return }
        let name = String(decoding: name, as: UTF8.self), value = String(decoding: value, as: UTF8.self)
        switch name {
        case ":method": partial[streamID]!.method = value
        case ":path": partial[streamID]!.path = value
        case ":authority": partial[streamID]!.authority = value
        case ":scheme": break
        default: partial[streamID]!.headers.append((name, value))
        }
    }

    package func sessionReceivedData(streamID: Int32, data: UnsafeBufferPointer<UInt8>) {
        guard partial[streamID] != nil else { return }
        partial[streamID]!.body.append(contentsOf: data)
    }

    package func sessionReceivedEndOfStream(streamID: Int32) {
        guard let request = partial.removeValue(forKey: streamID), !dropping, !stalled else { return }
        if streamID > goAwayLastStreamID {
            reset(streamID: streamID, errorCode: UInt32(NGHTTP2_REFUSED_STREAM.rawValue))
            return
        }
        requestsReceived += 1
        handler.handle(ServerRequest(streamID: streamID, method: request.method, path: request.path, authority: request.authority,
                                     headers: request.headers, body: request.body), on: self)
    }

    package func sessionClosedStream(streamID: Int32, errorCode: UInt32) {
        partial[streamID] = nil
        outgoing[streamID] = nil
    }

    package func sessionSentHeaders(streamID: Int32) {}
    package func sessionCouldNotSendHeaders(streamID: Int32, userData: UnsafeMutableRawPointer?) {}
    package func sessionReceivedGoAway(lastStreamID: Int32, errorCode: UInt32, debugData: UnsafeBufferPointer<UInt8>) {}
    package func sessionReceivedPingAcknowledgement() {}
}
