@testable import Fanout
import Testing

/// The fan-out's dedup table (issue 25): sized once for what a run can meet, about 10 bytes a
/// target, every token remembered — also past the expectation — and nothing at all kept by a run
/// whose targets each come once.
@Suite struct TokenTallyTests {
    static func hashes(_ count: Int, seed: UInt64 = 1) -> [UInt64] {
        var state = seed
        return (0..<count).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return state ^ (state >> 29)
        }
    }

    @Test func aTallySizedForItsTargetsHoldsEachInAboutTenBytesAndNeverGrows() {
        let targets = 1_000_000
        var tally = TokenTally(expecting: targets)
        let before = tally.memoryBytes
        for hash in Self.hashes(targets) { tally.markHandled(hash) }
        #expect(tally.memoryBytes == before, "it grew")
        #expect(tally.memoryBytes <= targets * 10 + 64)
        #expect(tally.count == targets)
    }

    @Test func everyTokenIsRememberedAndASecondMarkSaysSoAlsoPastTheExpectation() {
        var tally = TokenTally(expecting: 1_000)
        let seen = Self.hashes(50_000)
        var new = 0
        for hash in seen where tally.markHandled(hash) { new += 1 }
        #expect(new == seen.count)
        #expect(seen.allSatisfy { tally.isHandled($0) })
        var again = 0
        for hash in seen where !tally.markHandled(hash) { again += 1 }
        #expect(again == seen.count)
        #expect(Self.hashes(1_000, seed: 99).filter { tally.isHandled($0) }.isEmpty)
        #expect(tally.count == 50_000)
    }

    @Test func recentStartsAreCountedPerTokenBesideTheHandledFlag() {
        var tally = TokenTally(expecting: 10)
        let (a, b) = (UInt64(0x8000_0000_0000_0001), UInt64(0x0000_0000_0000_0001))  // differ only in the flag bit's place
        tally.countRecentStart(a)
        tally.countRecentStart(a)
        tally.markHandled(a)
        #expect(tally.recentStarts(a) == 2)
        #expect(tally.isHandled(a))
        #expect(tally.isHandled(b), "the top bit is the flag: these two hashes are one key (the stated 63-bit bound)")
        #expect(tally.recentStarts(UInt64(7)) == 0)
    }

    @Test func aTallyThatRemembersNothingHoldsNoMemoryAndCountsEveryTargetNew() {
        var tally = TokenTally(expecting: 10_000_000, remembering: false)
        #expect(tally.memoryBytes == 0)
        let first = tally.markHandled(42), second = tally.markHandled(42)
        #expect(first && second)
        #expect(!tally.isHandled(42))
    }
}
