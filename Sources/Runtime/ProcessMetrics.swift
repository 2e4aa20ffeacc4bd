#if canImport(Glibc)
import Glibc
#endif
import IO

/// The standard `process_*` metrics every Prometheus client library exports, so the usual alerts
/// and dashboards work unchanged — above all descriptors near the limit, the exhaustion this
/// daemon must survive (README, "Operations"). Read from /proc when scraped; a figure that cannot
/// be read is left out rather than reported as 0.
enum ProcessMetrics {
    static func render(into text: inout PrometheusText) {
        var usage = rusage()
        if getrusage(RUSAGE_SELF.rawValue, &usage) == 0 {
            let seconds = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
                + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
            text.family("process_cpu_seconds_total", .counter, help: "Total user and system CPU time spent in seconds.")
            text.sample("process_cpu_seconds_total", [], seconds)
        }
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        if let statm = SystemFile.read("/proc/self/statm")?.split(separator: " "), statm.count >= 2,
           let virtual = Int(statm[0]), let resident = Int(statm[1]) {
            text.family("process_virtual_memory_bytes", .gauge, help: "Virtual memory size in bytes.")
            text.sample("process_virtual_memory_bytes", [], virtual * page)
            text.family("process_resident_memory_bytes", .gauge, help: "Resident memory size in bytes.")
            text.sample("process_resident_memory_bytes", [], resident * page)
        }
        if let open = openDescriptors() {
            text.family("process_open_fds", .gauge, help: "Number of open file descriptors.")
            text.sample("process_open_fds", [], open)
        }
        if let limit = DescriptorLimit.current {
            text.family("process_max_fds", .gauge, help: "Maximum number of open file descriptors.")
            text.sample("process_max_fds", [], limit)
        }
        if let start = startTime() {
            text.family("process_start_time_seconds", .gauge, help: "Start time of the process since unix epoch in seconds.")
            text.sample("process_start_time_seconds", [], start)
        }
    }

    /// Entries of /proc/self/fd, less the one the listing itself holds open.
    private static func openDescriptors() -> Int? {
        DirectoryListing.names("/proc/self/fd").map { $0.count - 1 }
    }

    /// Boot time (/proc/stat `btime`) plus the process's start in clock ticks after boot
    /// (/proc/self/stat field 22, counted after the parenthesised command name, which may hold spaces).
    private static func startTime() -> Double? {
        guard let stat = SystemFile.read("/proc/self/stat"), let close = stat.lastIndex(of: ")"),
              let boot = SystemFile.read("/proc/stat")?.split(separator: "\n").first(where: { $0.hasPrefix("btime ") })?.split(separator: " ").last.flatMap({ Double($0) })
        else { return nil }
        // After ") " come field 3 (state) onwards: field 22 is the 20th of them.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count >= 20, let ticks = Double(fields[19]) else { return nil }
        return boot + ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
