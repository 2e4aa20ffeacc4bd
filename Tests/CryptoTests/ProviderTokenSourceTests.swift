import Crypto
import Dispatch
import Synchronization
import Testing

/// Token generations and per-connection switching with a hand-moved clock: a new generation every
/// 30 minutes, no connection switching within 20 minutes, none presenting a token older than 55.
@Suite struct ProviderTokenSourceTests {
    private let clock = ManualClock()
    private let source: ProviderTokenSource
    private let start: Int64

    init() throws {
        let signer = try ProviderTokenSigner(key: SigningKey(contentsOf: Fixtures.appleLayoutKey), keyID: Fixtures.keyID, teamID: Fixtures.teamID)
        source = ProviderTokenSource(signer: signer, now: clock.closure)
        start = clock.now
    }

    /// Moves the clock to `minutes:seconds` after the start.
    private func at(_ minutes: Int64, _ seconds: Int64 = 0) { clock.set(start + minutes * 60 + seconds) }

    @Test func oneGenerationServesEveryRequestWithTheSameCachedHeader() throws {
        var first: ProviderTokenLease?
        var second: ProviderTokenLease?
        let a = try source.token(for: &first)
        at(29, 59)
        let b = try source.token(for: &first)
        let c = try source.token(for: &second)
        #expect(a == b && b == c)
        #expect(a.authorization == "bearer " + a.jwt)
        #expect(a.issuedAt == start && a.generation == 1)
        #expect(first == ProviderTokenLease(generation: 1, startedAt: start))
        #expect(second == ProviderTokenLease(generation: 1, startedAt: start + 29 * 60 + 59))
        #expect(source.generationsMinted == 1)
    }

    @Test func newGenerationAtThirtyMinutesAndNewConnectionsTakeIt() throws {
        var old: ProviderTokenLease?
        _ = try source.token(for: &old)
        at(30)
        var fresh: ProviderTokenLease?
        let token = try source.token(for: &fresh)
        #expect(token.generation == 2 && token.issuedAt == start + 30 * 60)
        #expect(source.generationsMinted == 2)
        // The old connection has used generation 1 for 30 minutes (≥ 20): it moves too.
        #expect(try source.token(for: &old).generation == 2)
        #expect(old == ProviderTokenLease(generation: 2, startedAt: start + 30 * 60))
    }

    @Test func connectionStaysUntilTwentyMinutesOnItsToken() throws {
        var starter: ProviderTokenLease?
        _ = try source.token(for: &starter)                      // generation 1 issued at 0:00
        var lease: ProviderTokenLease?
        at(29)
        #expect(try source.token(for: &lease).generation == 1)   // joins generation 1 at 29:00
        at(30)
        var newcomer: ProviderTokenLease?
        #expect(try source.token(for: &newcomer).generation == 2)
        at(48, 59)
        #expect(try source.token(for: &lease).generation == 1)   // only 19:59 on generation 1
        at(49)
        #expect(try source.token(for: &lease).generation == 2)   // 20:00 on it: moves
        #expect(lease == ProviderTokenLease(generation: 2, startedAt: start + 49 * 60))
        at(68, 59)
        #expect(try source.token(for: &lease).generation == 2)   // generation 3 is minted, but 19:59 on 2
        #expect(source.generationsMinted == 3)
        at(69)
        #expect(try source.token(for: &lease).generation == 3)
    }

    @Test func lateJoinerOnAnOldGenerationStillNeverPresentsItPastFiftyFiveMinutes() throws {
        var early: ProviderTokenLease?
        _ = try source.token(for: &early)                        // generation 1 at 0:00
        at(29, 59)
        var late: ProviderTokenLease?
        #expect(try source.token(for: &late).generation == 1)    // joins generation 1 when it is 29:59 old
        at(30)
        #expect(try source.token(for: &early).generation == 2)   // generation 2 minted
        at(49, 58)
        #expect(try source.token(for: &late).generation == 1)    // 19:59 on it, token 49:58 old: stays
        at(49, 59)
        #expect(try source.token(for: &late).generation == 2)    // 20:00 on it: moves, token would be 49:59
    }

    @Test func fiftyFiveMinuteCeilingOverridesALeaseThatClaimsARecentStart() throws {
        var lease: ProviderTokenLease?
        _ = try source.token(for: &lease)
        at(30)
        var other: ProviderTokenLease?
        _ = try source.token(for: &other)                        // generation 2 exists
        // A lease (restored, or handed over) that says it joined generation 1 at 50:00.
        var restored: ProviderTokenLease? = ProviderTokenLease(generation: 1, startedAt: start + 50 * 60)
        at(55)
        #expect(try source.token(for: &restored).generation == 1)  // exactly 55:00 old: still allowed
        at(55, 1)
        #expect(try source.token(for: &restored).generation == 2)  // 55:01 old: must leave despite 5 min on it
    }

    @Test func idleConnectionReturningAfterHoursGetsTheNewestAndOldGenerationsAreForgotten() throws {
        var lease: ProviderTokenLease?
        _ = try source.token(for: &lease)
        at(200)
        let token = try source.token(for: &lease)
        #expect(token.generation == 2 && token.issuedAt == start + 200 * 60)
        #expect(source.generationsMinted == 2)
    }

    @Test func clockGoingBackwardsKeepsTheCurrentToken() throws {
        var lease: ProviderTokenLease?
        let token = try source.token(for: &lease)
        clock.set(start - 600)
        #expect(try source.token(for: &lease) == token)
        #expect(source.generationsMinted == 1)
    }

    /// Many connections joining and asking at irregular times over five hours: every presented
    /// token is at most 55 min old, no connection changes token within 20 min, generations are at
    /// least 30 min apart.
    @Test func invariantsHoldOverFiveHoursOfIrregularTraffic() throws {
        var leases = [ProviderTokenLease?](repeating: nil, count: 6)
        var previous = [ProviderTokenLease?](repeating: nil, count: 6)
        var issued = Set<Int64>()
        var random: UInt64 = 0x9e3779b97f4a7c15
        func next(_ bound: UInt64) -> Int64 {
            random = random &* 6364136223846793005 &+ 1442695040888963407
            return Int64((random >> 33) % bound)
        }
        var elapsed: Int64 = 0
        while elapsed < 5 * 3600 {
            elapsed += 1 + next(240)
            clock.set(start + elapsed)
            let connection = Int(next(UInt64(leases.count)))
            // Connections join late: each only from its own start time on.
            if leases[connection] == nil && elapsed < Int64(connection) * 1500 { continue }
            let token = try source.token(for: &leases[connection])
            let now = clock.now
            #expect(now - token.issuedAt <= 55 * 60, "token \(token.generation) presented at age \(now - token.issuedAt)")
            if let before = previous[connection], before.generation != token.generation {
                #expect(now - before.startedAt >= 20 * 60, "connection \(connection) switched after \(now - before.startedAt) s")
            }
            previous[connection] = leases[connection]
            issued.insert(token.issuedAt)
        }
        let times = issued.sorted()
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 30 * 60 })
        #expect(source.generationsMinted >= 8 && source.generationsMinted <= 11)
    }

    @Test func concurrentConnectionsShareOneGenerationAndMoveTogether() throws {
        let threads = 8
        let results = ResultsBox(count: threads)
        DispatchQueue.concurrentPerform(iterations: threads) { index in
            var lease: ProviderTokenLease?
            var seen = Set<String>()
            for _ in 0..<50 { if let token = try? source.token(for: &lease) { seen.insert(token.authorization) } }
            results.set(index, seen, lease)
        }
        #expect(source.generationsMinted == 1)
        #expect(Set(results.tokens.flatMap { $0 }).count == 1)

        at(30)
        DispatchQueue.concurrentPerform(iterations: threads) { index in
            var lease = results.leases[index]
            var seen = Set<String>()
            for _ in 0..<50 { if let token = try? source.token(for: &lease) { seen.insert(token.authorization) } }
            results.set(index, seen, lease)
        }
        #expect(source.generationsMinted == 2)
        #expect(Set(results.tokens.flatMap { $0 }).count == 1)
        #expect(results.leases.allSatisfy { $0 == ProviderTokenLease(generation: 2, startedAt: start + 30 * 60) })
    }
}

/// Per-thread results of the concurrency test.
private final class ResultsBox: Sendable {
    private let state: Mutex<(tokens: [Set<String>], leases: [ProviderTokenLease?])>

    init(count: Int) {
        state = Mutex((Array(repeating: [], count: count), Array(repeating: nil, count: count)))
    }

    func set(_ index: Int, _ tokens: Set<String>, _ lease: ProviderTokenLease?) {
        state.withLock {
            $0.tokens[index] = tokens
            $0.leases[index] = lease
        }
    }

    var tokens: [Set<String>] { state.withLock { $0.tokens } }
    var leases: [ProviderTokenLease?] { state.withLock { $0.leases } }
}
