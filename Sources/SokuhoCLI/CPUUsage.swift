#if canImport(Glibc)
import Glibc
#endif

/// Process CPU time and peak memory from getrusage.
enum CPUUsage {
    static func seconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return seconds(of: usage)
    }

    /// User + system CPU seconds of a `rusage` (this process's, or a child's from wait4).
    static func seconds(of usage: rusage) -> Double {
        Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// Peak resident memory of this process image: VmHWM from /proc/self/status (unlike
    /// ru_maxrss it starts afresh at exec, so `swift run` does not add the build tool's memory).
    static func peakRSSMegabytes() -> Double {
        if let status = try? InputFile.read("/proc/self/status", option: "peak RSS") {
            for line in String(decoding: status, as: UTF8.self).split(separator: "\n") where line.hasPrefix("VmHWM:") {
                let digits = line.dropFirst(6).filter { $0.isNumber }
                if let kilobytes = Double(String(digits)) { return kilobytes / 1024 }
            }
        }
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_maxrss) / 1024
    }
}
