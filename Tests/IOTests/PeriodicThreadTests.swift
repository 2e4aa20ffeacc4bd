#if canImport(Glibc)
import Glibc
#endif
import IO
import Testing
import Vocabulary

/// A periodic thread's life ends with its owner's, however the owner lets go of it.
struct PeriodicThreadTests {
    /// A value the test and a thread share (a `Lock` alone cannot be captured by the thread's closure).
    final class Shared<Value: Sendable>: Sendable {
        let lock: Lock<Value>
        init(_ value: Value) { lock = Lock(value) }
        var value: Value { lock.withLock { $0 } }
        func set(_ value: Value) { lock.withLock { $0 = value } }
    }

    static func sleep(milliseconds: Int) { usleep(useconds_t(milliseconds * 1000)) }

    /// Waits (bounded, for a loaded box) until `rounds` reaches `count`.
    static func await(_ rounds: Shared<Int>, atLeast count: Int) -> Bool {
        let deadline = MonotonicInstant.now() + .seconds(30)
        while rounds.value < count, MonotonicInstant.now() < deadline { Self.sleep(milliseconds: 2) }
        return rounds.value >= count
    }

    @Test func aPeriodicThreadDroppedWithoutStopEndsAndNeverRunsItsBodyAgain() {
        let rounds = Shared(0)
        var thread: PeriodicThread? = PeriodicThread(name: "test-periodic", interval: .milliseconds(2)) { _ in rounds.lock.withLock { $0 += 1 } }
        #expect(Self.await(rounds, atLeast: 3), "the body never ran three rounds")
        _ = thread
        // Before issue 37's fix its thread read the freed object at the next round and aborted the process.
        thread = nil
        let after = rounds.value
        Self.sleep(milliseconds: 100)
        #expect(rounds.value == after, "the body ran again after the thread's owner let go of it")
    }

    @Test func aPeriodicThreadWhoseBodyDropsTheLastReferenceToItEndsAfterThatRound() {
        let rounds = Shared(0)
        let holder = Shared<PeriodicThread?>(nil)
        let started = Shared(false)
        holder.lock.withLock { held in
            held = PeriodicThread(name: "test-periodic", interval: .milliseconds(2)) { _ in
                rounds.lock.withLock { $0 += 1 }
                // The thread itself drops its owner (it cannot join itself: it detaches).
                if started.value { holder.set(nil) }
            }
        }
        #expect(Self.await(rounds, atLeast: 1))
        started.set(true)
        let deadline = MonotonicInstant.now() + .seconds(30)
        while holder.value != nil, MonotonicInstant.now() < deadline { Self.sleep(milliseconds: 2) }
        #expect(holder.value == nil)
        let after = rounds.value
        Self.sleep(milliseconds: 100)
        #expect(rounds.value == after, "the body ran again after it dropped its thread")
    }

    @Test func stopWaitsForTheRoundUnderWayAndCanBeCalledTwice() {
        let inBody = Shared(false)
        let finished = Shared(false)
        let thread = PeriodicThread(name: "test-periodic", interval: .seconds(60)) { _ in
            inBody.set(true)
            Self.sleep(milliseconds: 50)
            finished.set(true)
        }
        let deadline = MonotonicInstant.now() + .seconds(30)
        while !inBody.value, MonotonicInstant.now() < deadline { Self.sleep(milliseconds: 1) }
        thread.stop()
        #expect(finished.value, "stop returned while the round was under way")
        thread.stop()
    }
}
