#if canImport(Glibc)
import Glibc
#endif
import APNs
import Crypto
import FCM
import HTTP2
import IO
import Sender
import Simulator
import Synchronization
import Testing
import Vocabulary

/// Every final outcome of an FCM run with what FCM said, and a hook at the Nth outcome.
final class FCMRecordingSink: PushOutcomeSink, @unchecked Sendable {
    struct Entry { let outcome: PushOutcome; let fcm: FCMRefusalDetail?; let prunesBehindBreaker: Bool; let finished: MonotonicInstant; let latency: Duration? }
    let entries = Lock<[UInt64: [Entry]]>([:])
    /// When the first push went off the wire (a refusal that resends it), if one did.
    let firstOffWire = Lock<MonotonicInstant?>(nil)
    let hookAt: Int
    let hook: @Sendable () -> Void
    private let count = Atomic<Int>(0)

    init(hookAt: Int = 0, hook: @escaping @Sendable () -> Void = {}) {
        self.hookAt = hookAt
        self.hook = hook
    }

    func pushCompleted(_ push: CompletedPush) {
        let entry = Entry(outcome: push.outcome, fcm: push.fcm, prunesBehindBreaker: push.prunesBehindBreaker, finished: .now(), latency: push.latency)
        entries.withLock { $0[push.id, default: []].append(entry) }
        if count.add(1, ordering: .relaxed).newValue == hookAt { hook() }
    }

    func pushWentOffWire(id: UInt64) {
        let now = MonotonicInstant.now()
        firstOffWire.withLock { $0 = $0 ?? now }
    }
}

/// One FCM fan-out through the pool against an in-process simulator.
struct FCMRun {
    var counters: SenderCounters
    var halt: String?
    var entries: [UInt64: [FCMRecordingSink.Entry]]
    var simulator: SimulatorCounters
    var generations: Int
    var firstOffWire: MonotonicInstant?

    static func tokenText(_ index: Int) -> String { "f\(index):APA91b" + String(repeating: "q", count: 140) }
    static func token(_ index: Int) -> DeviceToken { DeviceToken(bytes: Array(tokenText(index).utf8))! }

    static let template = try! FCMMessageTemplate(
        data: try! LiveUpdateData(eventKey: "eew-1", serial: 1, kind: .start, group: "region:301",
                                  contentState: Array(#"{"forecastIntensity":"5-"}"#.utf8), alertTitle: "緊急地震速報").fields,
        android: FCMAndroidOptions(priority: .high, ttl: .seconds(60), collapseKey: "eew-1"))

    /// The pool for `simulator`'s FCM side, with an access-token source for the account it wrote.
    static func pool(_ simulator: APNsSimulator, account: ServiceAccount? = nil) throws -> (PoolConfiguration, FCMAccessTokenSource) {
        let tls = try TLSConfiguration.client(caFile: PoolFaultTests.certificates.ca)
        let source = try FCMAccessTokenSource(account: account ?? simulator.fcmServiceAccount, tls: tls, timeout: .seconds(20))
        var pool = PoolConfiguration(host: "127.0.0.1", port: simulator.port, tls: tls)
        pool.provider = .fcm(source)
        pool.connections = 2
        pool.threads = 1
        pool.streamsPerConnection = 100
        return (pool, source)
    }

    /// `account`: another service account than the simulator's (made from the running simulator's).
    static func run(pushes: Int, deadline: Double = 30, hookAt: Int = 0,
                    configureSimulator: (inout SimulatorConfiguration) -> Void = { _ in },
                    hook: @escaping @Sendable (APNsSimulator) -> Void = { _ in },
                    account: ((APNsSimulator) throws -> ServiceAccount)? = nil,
                    configurePool: (inout PoolConfiguration) -> Void = { _ in }) throws -> FCMRun {
        let simulator = try testSimulator { configuration in
            configuration.trackTokens = true
            configuration.seed = 7
            configureSimulator(&configuration)
        }
        defer { simulator.stop() }
        let account = try account?(simulator)
        var (pool, source) = try pool(simulator, account: account)
        configurePool(&pool)
        let sink = FCMRecordingSink(hookAt: hookAt) { hook(simulator) }
        let sender = try ConnectionPool(configuration: pool, sink: sink)
        defer { sender.shutdown() }
        let group = PushGroup(label: "fcm", template: template, projectID: simulator.fcmServiceAccount.projectID,
                              deadline: MonotonicInstant.now() + .seconds(deadline), resendUnknown: false)
        sender.send((0..<pushes).map { PushJob(token: token($0), group: group, id: UInt64($0)) })
        #expect(sender.waitUntilFinished(timeout: .seconds(deadline + 10)), "every push must end by its deadline")
        return FCMRun(counters: sender.statistics().counters, halt: sender.haltMessage, entries: sink.entries.withLock { $0 },
                      simulator: simulator.counters, generations: source.generations, firstOffWire: sink.firstOffWire.withLock { $0 })
    }

    var delivered: Int { counters[.delivered] + counters[.deliveredAfterRetry] }

    func expectOneOutcomePerPush(_ pushes: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(entries.count == pushes && counters.finished == pushes, sourceLocation: sourceLocation)
        #expect(entries.values.allSatisfy { $0.count == 1 }, "a push reported twice", sourceLocation: sourceLocation)
    }
}

/// Issue 23: FCM through the same pool engine as APNs, against the simulator's FCM side over
/// loopback with real TLS: bodies spliced per push, access tokens fetched, refreshed and replaced,
/// FCM's answers mapped onto the pool's outcomes.
@Suite(.serialized) struct FCMPoolTests {
    @Test("every FCM push is delivered once, each with its own token spliced into the group's body")
    func everyPushIsDeliveredWithItsOwnBody() throws {
        let run = try FCMRun.run(pushes: 3_000)
        run.expectOneOutcomePerPush(3_000)
        #expect(run.counters[.delivered] == 3_000 && run.halt == nil)
        #expect(run.simulator.fcmAccepted == 3_000 && run.simulator.fcmAcceptedPerToken.count == 3_000)
        #expect(run.simulator.fcmAcceptedPerToken.values.allSatisfy { $0 == 1 })
        #expect(run.generations == 1 && run.simulator.fcmTokensGranted == 1, "one access token serves the whole run")
    }

    @Test("the pool's hand-out gate follows the streams FCM grants (100), not the 250 configured: nothing waits in the queue that no stream could take")
    func theGateFollowsTheGrantedStreams() throws {
        let simulator = try testSimulator { $0.seed = 7 }
        defer { simulator.stop() }
        var (pool, _) = try FCMRun.pool(simulator)
        pool.streamsPerConnection = 250
        pool.keepWarm = true
        let sender = try ConnectionPool(configuration: pool)
        defer { sender.shutdown() }
        let batch = HandOutGate.batch(forWire: 2 * 250)
        #expect(sender.handOut.maximumLimit == 2 * 250 + batch)
        // Both connections open before the pushes: each then takes one of the first (one stream
        // until a message is accepted) and reads FCM's SETTINGS before its answer.
        let openBy = MonotonicInstant.now() + .seconds(20)
        while sender.connectionsUp < 2, MonotonicInstant.now() < openBy { usleep(10_000) }
        #expect(sender.connectionsUp == 2)
        let group = PushGroup(label: "fcm", template: FCMRun.template, projectID: simulator.fcmServiceAccount.projectID,
                              deadline: MonotonicInstant.now() + .seconds(30), resendUnknown: false)
        sender.send((0..<400).map { PushJob(token: FCMRun.token($0), group: group, id: UInt64($0)) })
        #expect(sender.waitUntilFinished(timeout: .seconds(40)))
        #expect(sender.handOut.limit == 2 * 100 + batch, "limit \(sender.handOut.limit)")
        #expect(sender.handOut.maximumLimit == 2 * 250 + batch)
    }

    @Test("an unregistered token is dead, another project's is dead behind the breaker, and the rest are delivered")
    func deadTokensAreToldApart() throws {
        let run = try FCMRun.run(pushes: 200) { configuration in
            configuration.fcmUnregisteredTokens = Set((0..<10).map { FCMRun.tokenText($0) })
            configuration.fcmForeignTokens = Set((10..<15).map { FCMRun.tokenText($0) })
        }
        run.expectOneOutcomePerPush(200)
        #expect(run.counters[.tokenDead] == 15 && run.delivered == 185)
        for id in 0..<15 {
            let entry = try #require(run.entries[UInt64(id)]?.first)
            #expect(entry.outcome == .tokenDead)
            #expect(entry.fcm?.errorCode == (id < 10 ? "UNREGISTERED" : "SENDER_ID_MISMATCH"))
            #expect(entry.prunesBehindBreaker == (id >= 10), "only another project's tokens count toward the breaker")
        }
    }

    @Test("access tokens expired mid-run cost no message: each push gets one outcome, all delivered, after a new token")
    func anExpiredAccessTokenCostsNoMessage() throws {
        let run = try FCMRun.run(pushes: 4_000, hookAt: 500, configureSimulator: { $0.latency = .milliseconds(2) }) { simulator in
            simulator.expireFCMAccessTokens()
        }
        run.expectOneOutcomePerPush(4_000)
        #expect(run.delivered == 4_000 && run.halt == nil, "\(run.counters.outcomes) \(run.halt ?? "")")
        #expect((run.simulator.fcmRejected["UNAUTHENTICATED"] ?? 0) > 0, "the expiry must have hit pushes in flight")
        #expect(run.generations == 2 && run.simulator.fcmTokensGranted == 2, "one refresh for the whole pool")
        #expect(run.simulator.fcmAccepted == 4_000 && run.simulator.fcmAcceptedPerToken.values.allSatisfy { $0 == 1 })
    }

    @Test("a run longer than its access token's life refreshes it in the background and loses no message")
    func aShortLivedTokenIsRefreshedMidRun() throws {
        // 3,000 messages, 10 at a time, each answered 5 ms late: at least 1.5 s, past the refresh at 1 s.
        let run = try FCMRun.run(pushes: 3_000, configureSimulator: { $0.fcmAccessTokenLifetime = .seconds(2); $0.latency = .milliseconds(5) },
                                 configurePool: { $0.connections = 1; $0.streamsPerConnection = 10 })
        run.expectOneOutcomePerPush(3_000)
        #expect(run.delivered == 3_000 && run.halt == nil, "\(run.counters.outcomes)")
        #expect(run.generations >= 2, "the token was refreshed during the run")
        #expect(run.simulator.fcmAccepted == 3_000 && run.simulator.fcmAcceptedPerToken.values.allSatisfy { $0 == 1 })
    }

    @Test("a messages-a-minute limit holds the pool to it: 40 messages at 600 a minute take at least 3 s, every one delivered once")
    func theMessagesAMinuteLimitHoldsThePoolToIt() throws {
        // The bucket holds one second's 10 messages; the other 30 come at 10 a second. A lower
        // bound only: a loaded machine is slower, never faster.
        let started = MonotonicInstant.now()
        let run = try FCMRun.run(pushes: 40, configurePool: { $0.messagesPerMinute = 600 })
        let elapsed = MonotonicInstant.now() - started
        run.expectOneOutcomePerPush(40)
        #expect(run.delivered == 40 && run.simulator.fcmAccepted == 40)
        #expect(elapsed >= .milliseconds(2_900), "\(elapsed): the limit let messages through faster than 10 a second")
    }

    @Test("a message the limit holds back carries what is left of the deadline when it is written as its ttl, not what was left when its group was made")
    func theTTLFallsWhileTheLimitHoldsMessages() throws {
        // 40 messages at 600 a minute: the last goes out at least 2.9 s after the first, on a
        // 30 s deadline; the group's template says 60 s, more than the deadline has.
        let log = PoolFaultTests.certificates.directory + "/ttl-\(getpid()).jsonl"
        defer { unlink(log) }
        let run = try FCMRun.run(pushes: 40, deadline: 30, configureSimulator: { $0.logPath = log }, configurePool: { $0.messagesPerMinute = 600 })
        run.expectOneOutcomePerPush(40)
        #expect(run.delivered == 40)
        let lines = (SystemFile.read(log) ?? "").split(separator: "\n")
        let ttls = lines.compactMap { line -> Int? in
            guard let at = line.firstRange(of: #""ttl":""#) else { return nil }
            return Int(line[at.upperBound...].prefix { $0 != "s" })
        }
        #expect(ttls.count == 40, "every message says its ttl in whole seconds: \(lines.prefix(2))")
        #expect(ttls.allSatisfy { (0...29).contains($0) }, "never more than is left of the 30 s deadline: \(ttls)")
        // A loaded machine is slower, never faster: the last written is at least 2 s lower.
        #expect((ttls.max() ?? 0) - (ttls.min() ?? 0) >= 2, "falling as the limit holds them: \(ttls)")
    }

    @Test("quota 429s are waited out until the deadline, not for a fixed number of attempts: with 60% of answers a 429, every message is delivered")
    func quotaAnswersAreWaitedOutUntilTheDeadline() throws {
        // At 60%, five attempts fail 0.6^5 ≈ 8% of messages (one of 60 in nearly every run); each
        // round waits the 1 s Retry-After, and a message needing 55 of them is a 1-in-10^12 chance.
        let run = try FCMRun.run(pushes: 60, deadline: 60) { configuration in
            configuration.fcmFaults = [("QUOTA_EXCEEDED", 0.6)]
        }
        run.expectOneOutcomePerPush(60)
        #expect(run.delivered == 60 && run.counters[.failedAfterRetry] == 0, "\(run.counters.outcomes)")
        #expect(run.counters.retries >= 60, "the quota answered \(run.counters.retries) times")
    }

    @Test("a 429 QUOTA_EXCEEDED pauses the whole pool until Retry-After, then every push is delivered")
    func aQuotaAnswerPausesThePool() throws {
        let run = try FCMRun.run(pushes: 600) { configuration in
            configuration.fcmFaults = [("QUOTA_EXCEEDED", 0.01)]
        }
        run.expectOneOutcomePerPush(600)
        #expect(run.delivered == 600 && run.counters.retries > 0, "\(run.counters.outcomes)")
        // One loop thread: once the 429 is in, nothing is first sent until its Retry-After (1 s) is over.
        let paused = try #require(run.firstOffWire)
        let sentDuringPause = run.entries.values.compactMap { $0.first }.filter { (entry: FCMRecordingSink.Entry) -> Bool in
            guard let latency = entry.latency else { return false }
            // First sent at `finished - latency`: how long after the pause began (negative: before).
            let sentAfterPause = (entry.finished - paused) - latency
            return sentAfterPause > .milliseconds(50) && sentAfterPause < .milliseconds(900)
        }
        #expect(sentDuringPause.isEmpty, "\(sentDuringPause.count) pushes went out during the pause")
    }

    @Test("a second 401 with a freshly granted token halts the pool saying so, each push with one outcome")
    func aRefusedFreshTokenHalts() throws {
        let run = try FCMRun.run(pushes: 50) { configuration in configuration.fcmFaults = [("UNAUTHENTICATED", 1.0)] }
        run.expectOneOutcomePerPush(50)
        #expect(run.counters[.authOrConnectionFailure] == 50)
        #expect(run.halt?.contains("freshly granted access token") == true, "\(run.halt ?? "no halt")")
        #expect(run.generations == 2, "one new token, not one per push")
    }

    @Test("invalid_grant from the token endpoint halts the pool with Google's description, and nothing is sent")
    func invalidGrantHalts() throws {
        let otherKey = try RSASigningKey.generate().pkcs8PEM
        @Sendable func other(_ simulator: APNsSimulator) throws -> ServiceAccount {
            let real = simulator.fcmServiceAccount
            return try ServiceAccount(projectID: real.projectID, privateKeyID: real.privateKeyID, privateKeyPEM: otherKey,
                                      clientEmail: real.clientEmail, tokenURI: real.tokenURI)
        }
        let simulator = try testSimulator()
        defer { simulator.stop() }
        let (_, source) = try FCMRun.pool(simulator, account: try other(simulator))
        #expect(throws: FCMAuthError.self) { try source.fetchNow() }
        do { try source.fetchNow() } catch {
            #expect(!error.isTransient && error.description.contains("invalid_grant"), "\(error)")
        }
        let run = try FCMRun.run(pushes: 20, account: other)
        run.expectOneOutcomePerPush(20)
        #expect(run.counters[.authOrConnectionFailure] == 20 && run.simulator.fcmAccepted == 0)
        #expect(run.halt?.contains("invalid_grant") == true, "\(run.halt ?? "no halt")")
    }

    @Test("a field FCM refuses is a request bug naming the field, judged on an FCM pool by FCM's rules")
    func aBadFieldIsARequestBug() throws {
        let simulator = try testSimulator()
        defer { simulator.stop() }
        let (pool, _) = try FCMRun.pool(simulator)
        let body = Array(#"{"message":{"token":"fabc:APA91b","android":{"priority":"URGENT"}}}"#.utf8)
        let request = ConnectionPool.Request(method: .post, path: FCMEndpoint.sendPath(projectID: simulator.fcmServiceAccount.projectID),
                                             headers: [.init("content-type", "application/json")], body: body)
        let answer = try ConnectionPool.perform([request], configuration: pool, timeout: .seconds(20))[0]
        #expect(answer.outcome == .requestBug && answer.status == 400)
        #expect(answer.fcm?.field == "message.android.priority" && answer.fcm?.action == .fixRequest, "\(String(describing: answer.fcm))")
    }
}
