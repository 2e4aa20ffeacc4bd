import IO

/// A run's delivery curve (the chart) and memory peak, sampled about every 200 ms while it waits
/// for room or answers; each sample also goes to `FanoutOptions.progress` (the terminal line).
final class RunSamples {
    private let start: MonotonicInstant
    private let sink: FanoutSink
    private let progress: (@Sendable (Int, Int) -> Void)?
    /// (seconds since the start of the run, delivered so far).
    private(set) var delivered: [(seconds: Double, count: Int)] = []
    /// The highest resident memory seen (the first reading when the sampling began).
    private(set) var peakMemory = MemoryUse.current()

    init(start: MonotonicInstant, sink: FanoutSink, progress: (@Sendable (Int, Int) -> Void)?) {
        self.start = start
        self.sink = sink
        self.progress = progress
    }

    func sample() {
        peakMemory = peakMemory.peak(with: MemoryUse.current())
        let (count, inFlight) = sink.progress()
        delivered.append(((MonotonicInstant.now() - start).seconds, count))
        progress?(count, inFlight)
    }
}
