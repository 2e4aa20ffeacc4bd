#if canImport(Glibc)
import Glibc
#endif

/// Everything readable from `fd` until its other end closes it (`closed`), or until nothing arrived
/// for `seconds`.
func readToEnd(_ fd: Int32, timeout seconds: Int32) -> (text: String, closed: Bool) {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, seconds * 1000) == 1 else { return (String(decoding: bytes, as: UTF8.self), false) }
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return (String(decoding: bytes, as: UTF8.self), true) }
        bytes.append(contentsOf: chunk[0..<n])
    }
}
