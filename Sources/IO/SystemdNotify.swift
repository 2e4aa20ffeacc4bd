#if canImport(Glibc)
import Glibc
#endif
import CSystem

/// The systemd readiness protocol without libsystemd: one datagram ("READY=1", "STOPPING=1",
/// "RELOADING=1") to the AF_UNIX socket named by `NOTIFY_SOCKET` (an abstract one when it starts
/// with "@"). Without the variable (not under systemd, or `Type=simple`) it does nothing.
public enum SystemdNotify {
    /// Sends `state`; returns false when there is no socket or the send failed (the caller logs it:
    /// a unit with `Type=notify` would then time out, which is the message worth seeing).
    @discardableResult
    public static func send(_ state: String, environment: [String: String]) -> Bool {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty, path.utf8.count < 108 else { return false }
        let descriptor: FileDescriptor
        do throws(TransportError) {
            descriptor = FileDescriptor(adopting: try Syscall.check("socket(AF_UNIX)") { socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) })
        } catch { return false }
        let fd = descriptor.rawValue
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }  // abstract namespace
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let message = Array(state.utf8)
        let sent = try? Syscall.transfer("sendto(NOTIFY_SOCKET)") {
            withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                    message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length) }
                }
            }
        }
        return sent == message.count
    }
}
