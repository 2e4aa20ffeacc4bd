import IO
import TokenStore
import Vocabulary

/// The store's token statistics, kept between requests: counting them reads every token key
/// (seconds on millions of tokens), which must happen neither on the HTTP thread nor once per
/// request. `GET /v1/tokens/stats` takes them at most 5 s old, `/metrics` and the status page at
/// most a minute; the routes read `fresh(within:)` on the HTTP thread and, when it has nothing
/// young enough, ask a worker for `refreshed(within:)`. A standby that swaps its store for a
/// shipped backup calls `invalidate`, so the next request counts the new store.
package final class TokenStatisticsCache: Sendable {
    private struct State {
        var statistics: StoreStatistics?
        var countedAt = MonotonicInstant(nanoseconds: 0)
        /// Bumped by `invalidate`: a count that began before it is of the old store.
        var generation = 0
        /// Counts kept so far: a caller that waited for someone else's count takes it.
        var counts = 0
    }

    /// How old `GET /v1/tokens/stats` may find them (README, openapi.json).
    package static let routeAge: Duration = .seconds(5)

    package init() {}

    private let state = Lock(State())
    /// Held while counting: callers that want a newer count meanwhile wait and take that one
    /// instead of scanning again.
    private let counting = Lock(())

    /// The cached statistics if counted within `age`; never blocks on a count.
    package func fresh(within age: Duration) -> StoreStatistics? {
        state.withLock { state in
            guard let statistics = state.statistics, MonotonicInstant.now() - state.countedAt <= age else { return nil }
            return statistics
        }
    }

    /// Statistics counted within `age`: the cached ones, or a new count of `store()` (one at a
    /// time). Nil when the store cannot be read. Blocks: for a worker, not the HTTP thread.
    package func refreshed(within age: Duration, store: () -> TokenStore) -> StoreStatistics? {
        refreshed(within: age, after: ticket(), store: store)
    }

    /// Which counts have been kept: a caller holding this takes any count kept after it.
    package func ticket() -> Int { state.withLock { $0.counts } }

    /// `refreshed(within:store:)` for a caller that asked at `asked` (a `ticket`).
    package func refreshed(within age: Duration, after asked: Int, store: () -> TokenStore) -> StoreStatistics? {
        counting.withLock { _ in
            // A count that ended while this caller waited is older than the request by at most
            // one count's duration: taken whatever its age, or a count slower than `age` (tens of
            // millions of tokens on an SD card) would make every waiter count again in turn.
            if let waitedFor = state.withLock({ $0.counts != asked ? $0.statistics : nil }) { return waitedFor }
            // Twice at most: a count that raced with `invalidate` is of the replaced store.
            for _ in 0..<2 {
                if let cached = fresh(within: age) { return cached }
                let (generation, started) = state.withLock { ($0.generation, MonotonicInstant.now()) }
                guard let statistics = try? store().statistics() else { return nil }
                let kept = state.withLock { state -> Bool in
                    guard state.generation == generation else { return false }
                    // Its age runs from when the count began: the store may have changed during it.
                    (state.statistics, state.countedAt) = (statistics, started)
                    state.counts += 1
                    return true
                }
                if kept { return statistics }
            }
            return nil
        }
    }

    /// Forgets the cached statistics (the store was swapped): the next request counts again.
    package func invalidate() {
        state.withLock { state in
            state.statistics = nil
            state.generation += 1
        }
    }
}
