import Crypto
import Dispatch
import Vocabulary
import Testing

/// Token generations on the 30-minute wall-clock grid and per-connection switching, with a
/// hand-moved clock. The clock starts on a grid point (1_800_000_000 = 1_000_000 × 1800).
@Suite struct ProviderTokenSourceTests {
    private let clock = ManualClock()
    private let signer: ProviderTokenSigner
    private let source: ProviderTokenSource
    private let start: Int64

    init() throws {
        signer = try ProviderTokenSigner(key: SigningKey(contentsOf: Fixtures.appleLayoutKey), keyID: Fixtures.keyID, teamID: Fixtures.teamID)
        source = ProviderTokenSource(signer: signer, now: clock.closure)
        start = clock.now
    }

    /// Moves the clock to `minutes:seconds` after the start.
    private func at(_ minutes: Int64, _ seconds: Int64 = 0) { clock.set(start + minutes * 60 + seconds) }

    @Test("Every request in one window gets the same cached token, signed once, whose iat is the window's grid point")
    func oneWindowOneToken() throws {
        #expect(ProviderTokenSource.window == .seconds(1800))
        #expect(ProviderTokenSource.minimumTimeOnToken == .seconds(1200))
        #expect(ProviderTokenSource.maximumTokenAge == .seconds(3000))
        at(7, 13)
        var first: ProviderTokenLease?
        var second: ProviderTokenLease?
        let a = try source.token(for: &first)
        at(29, 59)
        let b = try source.token(for: &first)
        let c = try source.token(for: &second)
        #expect(a == b && b == c)
        #expect(a.authorization == "bearer " + a.jwt)
        #expect(a.issuedAt == start && a.generation == 1_000_000)
        #expect(try CompactJWT(parsing: a.jwt).claims == Array(#"{"iss":"TEAM123456","iat":1800000000}"#.utf8))
        #expect(source.generationsMinted == 1)
    }

    @Test("A lease is stamped when the connection first presents the token, and later calls leave it unchanged")
    func leaseStampedAtFirstUse() throws {
        at(12)
        var lease: ProviderTokenLease?
        _ = try source.token(for: &lease)
        #expect(lease == ProviderTokenLease(generation: 1_000_000, startedAt: start + 12 * 60))
        at(25)
        _ = try source.token(for: &lease)
        #expect(lease == ProviderTokenLease(generation: 1_000_000, startedAt: start + 12 * 60))
    }

    @Test("The grid window of a time is its epoch seconds floored to a multiple of 1800, also before 1970")
    func gridFloors() {
        #expect(ProviderTokenSource.generation(at: 0) == 0)
        #expect(ProviderTokenSource.generation(at: 1799) == 0)
        #expect(ProviderTokenSource.generation(at: 1800) == 1)
        #expect(ProviderTokenSource.generation(at: -1) == -1)
        #expect(ProviderTokenSource.generation(at: -1800) == -1)
        #expect(ProviderTokenSource.generation(at: -1801) == -2)
    }

    @Test("A new connection in a new window takes the new token; an old one moves there when it next sends after 20 minutes on its token")
    func newWindowNewToken() throws {
        var old: ProviderTokenLease?
        _ = try source.token(for: &old)                          // first use at 0:00
        at(30)
        var fresh: ProviderTokenLease?
        let token = try source.token(for: &fresh)
        #expect(token.generation == 1_000_001 && token.issuedAt == start + 30 * 60)
        #expect(source.generationsMinted == 2)
        #expect(old == ProviderTokenLease(generation: 1_000_000, startedAt: start))  // untouched until it sends
        at(31)
        #expect(try source.token(for: &old) == token)
        #expect(old == ProviderTokenLease(generation: 1_000_001, startedAt: start + 31 * 60))
    }

    @Test("A connection that first used a token 29:59 into its window keeps it until 49:59 after its iat and no longer")
    func lateJoinerKeepsTokenTwentyMinutes() throws {
        at(29, 59)
        var late: ProviderTokenLease?
        let first = try source.token(for: &late)
        at(30)
        var other: ProviderTokenLease?
        #expect(try source.token(for: &other).generation == first.generation + 1)
        at(49, 58)
        #expect(try source.token(for: &late) == first)            // 19:59 on it, token 49:58 old: stays
        at(49, 59)
        let next = try source.token(for: &late)                   // 20:00 on it: moves at age 49:59
        #expect(next.generation == first.generation + 1)
        #expect(late == ProviderTokenLease(generation: next.generation, startedAt: start + 49 * 60 + 59))
        at(69, 58)
        #expect(try source.token(for: &late) == next)             // window 3 began at 60:00, but 19:59 on 2
        at(69, 59)
        #expect(try source.token(for: &late).generation == next.generation + 1)
    }

    @Test("A lease that claims a recent first use is still moved before its token is 50 minutes old")
    func ceilingOverridesRestoredLease() throws {
        // A lease (restored, or handed over) that says it started on the first window at 45:00.
        var restored: ProviderTokenLease? = ProviderTokenLease(generation: 1_000_000, startedAt: start + 45 * 60)
        at(49, 59)
        #expect(try source.token(for: &restored).generation == 1_000_000)
        at(50)
        #expect(try source.token(for: &restored).generation == 1_000_001)
        #expect(restored == ProviderTokenLease(generation: 1_000_001, startedAt: start + 50 * 60))
    }

    @Test("A connection idle for hours gets the current window's token when it sends again")
    func idleConnectionCatchesUp() throws {
        var lease: ProviderTokenLease?
        _ = try source.token(for: &lease)
        at(200)
        let token = try source.token(for: &lease)
        #expect(token.generation == 1_000_006 && token.issuedAt == start + 180 * 60)
        #expect(source.generationsMinted == 2)
    }

    @Test("When the clock steps back, a connection keeps its token, and the 20 minutes restart on the clock as it now reads")
    func clockSteppingBack() throws {
        at(25)
        var lease: ProviderTokenLease?
        let token = try source.token(for: &lease)
        clock.set(start - 3600)                                  // two windows back
        #expect(try source.token(for: &lease) == token)
        #expect(lease == ProviderTokenLease(generation: 1_000_000, startedAt: start - 3600))
        clock.set(start - 3600 + 1199)
        #expect(try source.token(for: &lease) == token)
        clock.set(start - 3600 + 1200)
        #expect(try source.token(for: &lease).generation == 999_998)
    }

    @Test("A token that fell out of the cache is signed again to the same bytes")
    func evictedGenerationResignsIdentically() throws {
        let first = try source.token(at: start)
        _ = try source.token(at: start + 1800)
        _ = try source.token(at: start + 3600)
        #expect(source.generationsMinted == 3)
        #expect(try source.token(at: start + 1799) == first)
        #expect(source.generationsMinted == 4)
    }

    /// Many connections opening, sending and going idle at irregular times over ten hours, on two
    /// independent sources sharing the key and clock (two processes, or two nodes).
    @Test("Over ten hours of irregular traffic no token is presented at 50 minutes or older, no connection changes token within 20 minutes of first using it, and two sources present identical bytes")
    func invariantsHoldOverIrregularTraffic() throws {
        let twin = ProviderTokenSource(signer: try ProviderTokenSigner(key: SigningKey(contentsOf: Fixtures.appleLayoutKey),
                                                                       keyID: Fixtures.keyID, teamID: Fixtures.teamID),
                                       now: clock.closure)
        let connections = 40
        var leases = [ProviderTokenLease?](repeating: nil, count: connections)
        var firstUse = [Int64](repeating: 0, count: connections)
        var presented = [Int?](repeating: nil, count: connections)
        var random: UInt64 = 0x9e3779b97f4a7c15
        func next(_ bound: UInt64) -> Int64 {
            random = random &* 6364136223846793005 &+ 1442695040888963407
            return Int64((random >> 33) % bound)
        }
        var oldest: Int64 = 0
        var switches = 0
        var windows = Set<Int>()
        var elapsed: Int64 = 0
        while elapsed < 10 * 3600 {
            elapsed += 1 + next(90)
            clock.set(start + 7 + elapsed)                        // off the grid on purpose
            let now = clock.now
            let connection = Int(next(UInt64(connections)))
            if next(50) == 0 { leases[connection] = nil; presented[connection] = nil; continue }  // reconnects
            let useTwin = connection % 2 == 1
            let token = try (useTwin ? twin : source).token(for: &leases[connection])
            #expect(now - token.issuedAt < 50 * 60, "token \(token.generation) presented at age \(now - token.issuedAt)")
            #expect(token.issuedAt % 1800 == 0)
            oldest = max(oldest, now - token.issuedAt)
            if let before = presented[connection], before != token.generation {
                #expect(now - firstUse[connection] >= 20 * 60, "connection \(connection) switched after \(now - firstUse[connection]) s")
                #expect(token.generation == ProviderTokenSource.generation(at: now), "a switch goes to the current window")
                switches += 1
            }
            if presented[connection] != token.generation { firstUse[connection] = now }
            presented[connection] = token.generation
            windows.insert(token.generation)
            #expect(try (useTwin ? source : twin).token(at: token.issuedAt) == token, "the other source signs the same bytes")
        }
        #expect(switches > 100, "the traffic exercised switching")
        #expect(oldest > 40 * 60, "some connections kept a token well into the next window")
        // One signature per window per process: each source signed every window once (the other's
        // windows through the cross-check), never twice.
        #expect(windows.count >= 20)
        #expect(source.generationsMinted == windows.count && twin.generationsMinted == windows.count)
    }

    @Test("Concurrent connections share one token per window and move together")
    func concurrentConnectionsShareOneToken() throws {
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
        #expect(results.leases.allSatisfy { $0 == ProviderTokenLease(generation: 1_000_001, startedAt: start + 30 * 60) })
    }
}

/// Per-thread results of the concurrency test.
private final class ResultsBox: Sendable {
    private let state: Lock<(tokens: [Set<String>], leases: [ProviderTokenLease?])>

    init(count: Int) {
        state = Lock((Array(repeating: [], count: count), Array(repeating: nil, count: count)))
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
