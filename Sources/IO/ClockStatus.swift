import CSystem

/// Whether the kernel considers the system clock synchronised (adjtimex): provider tokens and
/// `apns-expiration` depend on the wall clock, and a Raspberry Pi has no hardware clock, so a box
/// that booted without network time would sign tokens APNs rejects. `/readyz` and the status page
/// say so before an event finds out.
public struct ClockStatus: Sendable, Equatable {
    /// The kernel's STA_UNSYNC flag is clear (an NTP daemon such as systemd-timesyncd or chrony
    /// disciplines the clock).
    public var synchronised: Bool
    /// The kernel's estimate of the maximum error, in microseconds (nil when unknown).
    public var maximumErrorMicroseconds: Int?

    public init(synchronised: Bool, maximumErrorMicroseconds: Int?) {
        self.synchronised = synchronised
        self.maximumErrorMicroseconds = maximumErrorMicroseconds
    }

    /// Reads the kernel's view now. `adjtimex` with modes 0 only reads; it cannot fail for a valid
    /// buffer, but a return of -1 is reported as "not synchronised" rather than trusted.
    public static func current() -> ClockStatus {
        var buffer = timex()
        // TIME_ERROR (5) means unsynchronised; STA_UNSYNC (0x0040) in status says the same.
        guard let state = try? Syscall.check("adjtimex", { adjtimex(&buffer) }) else {
            return ClockStatus(synchronised: false, maximumErrorMicroseconds: nil)
        }
        let unsynchronised = state == 5 || (buffer.status & 0x0040) != 0
        return ClockStatus(synchronised: !unsynchronised, maximumErrorMicroseconds: Int(buffer.maxerror))
    }
}
