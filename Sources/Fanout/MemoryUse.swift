import IO

/// Resident memory split the way the fan-out's budget is stated: anonymous (the heap: what the
/// process allocated) and file-backed (the token store's memory map, which the kernel can drop
/// and re-read at will). From /proc/self/status; zero where it cannot be read.
public struct MemoryUse: Sendable, Equatable {
    public var anonymousMB = 0.0
    public var fileMB = 0.0

    public init() {}

    public static func current() -> MemoryUse {
        var use = MemoryUse()
        guard let status = SystemFile.read("/proc/self/status") else { return use }
        for text in status.split(separator: "\n") {
            let kilobytes = Double(text.filter(\.isNumber)) ?? 0
            if text.hasPrefix("RssAnon:") { use.anonymousMB = kilobytes / 1024 }
            if text.hasPrefix("RssFile:") { use.fileMB = kilobytes / 1024 }
        }
        return use
    }

    /// The larger of each part.
    public func peak(with other: MemoryUse) -> MemoryUse {
        var peak = self
        peak.anonymousMB = max(anonymousMB, other.anonymousMB)
        peak.fileMB = max(fileMB, other.fileMB)
        return peak
    }
}
