import Glibc
import IO
import Synchronization
import Vocabulary
@testable import Daemon
import Runtime
import TokenStore
import Testing

/// The token counts' cache without a daemon: one count at a time, shared with whoever waited for
/// it, and forgotten when the store is swapped.
@Suite struct TokenStatisticsCacheTests {
    @Test func aRequestThatWaitedForACountInProgressTakesItInsteadOfCountingAgain() throws {
        let fixture = CLIFixture()
        let store = try TokenStore(directory: fixture.store)
        defer { store.close() }
        let cache = TokenStatisticsCache()
        let counts = Atomic<Int>(0)
        let gate = ConditionLock()
        let open = Lock(false)
        // The first count is held at the gate until the second request has asked.
        let held: @Sendable () -> TokenStore = {
            if counts.add(1, ordering: .relaxed).newValue == 1 {
                gate.withLock { while !open.withLock({ $0 }) { gate.wait(until: MonotonicInstant.now() + .seconds(1)) } }
            }
            return store
        }
        let first = OSThread.start(name: "test-count") { _ = cache.refreshed(within: .zero, store: held) }
        let deadline = MonotonicInstant.now() + .seconds(10)
        while counts.load(ordering: .relaxed) == 0, MonotonicInstant.now() < deadline { usleep(1_000) }
        let asked = cache.ticket()  // the second request, while the first count runs
        gate.withLock { open.withLock { $0 = true }; gate.broadcast() }
        first.join()
        // Age zero: without sharing, the second request would count again however new the first count is.
        #expect(cache.refreshed(within: .zero, after: asked, store: held) != nil)
        #expect(counts.load(ordering: .relaxed) == 1)
    }

    @Test func countsAreReusedWithinTheirAgeAndForgottenWhenTheStoreIsSwapped() throws {
        let fixture = CLIFixture()
        let store = try TokenStore(directory: fixture.store)
        defer { store.close() }
        let cache = TokenStatisticsCache()
        let counts = Atomic<Int>(0)
        let counting: @Sendable () -> TokenStore = { counts.add(1, ordering: .relaxed); return store }
        #expect(cache.fresh(within: .seconds(5)) == nil)
        #expect(cache.refreshed(within: .seconds(5), store: counting) != nil)
        #expect(cache.fresh(within: .seconds(5)) != nil)
        #expect(cache.refreshed(within: .seconds(5), store: counting) != nil)
        #expect(counts.load(ordering: .relaxed) == 1, "a count younger than 5 s is reused")
        cache.invalidate()
        #expect(cache.fresh(within: .seconds(5)) == nil, "a swapped store's counts are not served")
        #expect(cache.refreshed(within: .seconds(5), store: counting) != nil)
        #expect(counts.load(ordering: .relaxed) == 2)
    }
}
