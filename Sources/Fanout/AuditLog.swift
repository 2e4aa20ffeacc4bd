#if canImport(Glibc)
import Glibc
#endif
import JSONCore
import Sender

/// `--log FILE`: one JSON line per push, the delivery audit: the token's last 8 characters, the
/// group, APNs' ids, status, reason and outcome. Never the whole token.
final class AuditLog: @unchecked Sendable {
    // @unchecked: each line is one fwrite, which holds the FILE's lock.
    private let file: UnsafeMutablePointer<FILE>

    init(path: String) throws(FanoutError) {
        guard let file = fopen(path, "a") else {
            throw FanoutError(.store, "--log \(path): \(String(cString: strerror(errno)))")
        }
        self.file = file
    }

    deinit { fclose(file) }

    func write(_ push: CompletedPush, group: String) {
        var writer = JSONWriter(reservingCapacity: 256)
        writer.beginObject()
        writer.key("token"); writer.string(String(push.token.hex.suffix(8)))
        writer.key("group"); writer.string(group)
        writer.key("apnsId"); if let id = push.apnsID { writer.string(id) } else { writer.null() }
        writer.key("apnsUniqueId"); if let id = push.uniqueID { writer.string(id) } else { writer.null() }
        writer.key("status"); writer.int(push.status)
        writer.key("reason"); if let reason = push.reason { writer.string(reason.name) } else { writer.null() }
        writer.key("outcome"); writer.string(push.outcome.description)
        writer.endObject()
        var bytes = writer.bytes
        bytes.append(UInt8(ascii: "\n"))
        _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
    }

    func flush() { fflush(file) }
}
