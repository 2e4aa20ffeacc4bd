import APNs
import HTTP2
import Testing
import Vocabulary
@testable import Sender

/// The sender's pure parts: retry decisions, queues, latency percentiles, tokens.
@Suite struct SenderLogicTests {
    let policy = RetryPolicy()

    @Test(arguments: [
        (200, nil as String?, PushOutcome.delivered),
        (410, "Unregistered", .tokenDead),
        (400, "BadDeviceToken", .tokenDead),
        (400, "DeviceTokenNotForTopic", .tokenDead),
        (400, "BadTopic", .requestBug),
        (413, "PayloadTooLarge", .requestBug),
        (404, "BadPath", .requestBug),
    ])
    func finalResponses(status: Int, reason: String?, outcome: PushOutcome) {
        #expect(policy.decide(status: status, reason: reason.map(Reason.init), attempts: 1, resends: 0, random: 0.5) == .finish(outcome))
    }

    @Test func successAfterARetryIsCountedApart() {
        #expect(policy.decide(status: 200, reason: nil, attempts: 2, resends: 0, random: 0) == .finish(.deliveredAfterRetry))
        #expect(policy.decide(status: 200, reason: nil, attempts: 1, resends: 1, random: 0) == .finish(.deliveredAfterRetry))
    }

    @Test(arguments: ["TooManyRequests", "InternalServerError", "ServiceUnavailable", "Service Unavailable"])
    func transientErrorsBackOffThenGiveUp(reason: String) {
        let status = reason == "TooManyRequests" ? 429 : reason == "InternalServerError" ? 500 : 503
        guard case let .retry(delay) = policy.decide(status: status, reason: Reason(reason), attempts: 1, resends: 0, random: 0.999) else {
            Issue.record("\(reason) must be retried"); return
        }
        #expect(delay <= policy.baseDelay && delay >= policy.baseDelay / 2)
        #expect(policy.decide(status: status, reason: Reason(reason), attempts: policy.maximumAttempts, resends: 0, random: 0) == .finish(.failedAfterRetry))
    }

    /// With a deadline the server's own trouble is waited out until it; a phone's rate (429) is not.
    @Test(arguments: [(500, "InternalServerError", true), (503, "ServiceUnavailable", true), (429, "TooManyRequests", false)])
    func withADeadlineTheServersTroubleIsRetriedUntilIt(status: Int, reason: String, untilDeadline: Bool) {
        let decided = policy.decide(status: status, reason: Reason(reason), attempts: policy.maximumAttempts, resends: 0, random: 0,
                                    retryAfter: .zero, untilDeadline: true)
        if untilDeadline {
            #expect(decided == .retry(delay: policy.baseDelay / 2), "\(decided): never a busy loop on Retry-After: 0")
        } else {
            #expect(decided == .finish(.failedAfterRetry))
        }
    }

    @Test func backoffDoublesWithJitterAndIsCapped() {
        for attempt in 1...12 {
            let ceiling = min(policy.maximumDelay, policy.baseDelay * (1 << (attempt - 1)))
            let low = policy.backoff(attempt: attempt, random: 0), high = policy.backoff(attempt: attempt, random: 0.9999)
            #expect(low == ceiling / 2)
            #expect(high <= ceiling && high > ceiling * 9 / 10)
        }
    }

    @Test func credentialErrorsHaltThePoolAndConnectionErrorsMoveOn() {
        #expect(policy.decide(status: 403, reason: .invalidProviderToken, attempts: 1, resends: 0, random: 0) == .haltPool(.authOrConnectionFailure))
        #expect(policy.decide(status: 400, reason: .topicDisallowed, attempts: 1, resends: 0, random: 0) == .haltPool(.authOrConnectionFailure))
        guard case .resendOnNewConnection = policy.decide(status: 403, reason: .expiredProviderToken, attempts: 1, resends: 0, random: 0) else {
            Issue.record("ExpiredProviderToken: new connection"); return
        }
        guard case .resendOnNewConnection = policy.decide(status: 503, reason: .shutdown, attempts: 1, resends: 0, random: 0) else {
            Issue.record("Shutdown: new connection"); return
        }
    }

    @Test func unknownOutcomesAreResentOnlyWhenTheGroupAllows() {
        let lost = StreamFailure.unknown("connection lost")
        #expect(policy.decide(failure: lost, resendUnknown: false, resends: 0) == .finish(.unknown))
        #expect(policy.decide(failure: lost, resendUnknown: true, resends: 0) == .resendUnknown)
        #expect(policy.decide(failure: .refused("GOAWAY"), resendUnknown: false, resends: 0) == .resendRefused)
        #expect(policy.decide(failure: .timedOut(sent: false), resendUnknown: false, resends: 0) == .resendRefused)
        #expect(policy.decide(failure: .timedOut(sent: true), resendUnknown: false, resends: 0) == .finish(.unknown))
        // A server that refuses forever cannot make a push loop.
        #expect(policy.decide(failure: .refused("x"), resendUnknown: false, resends: policy.maximumResends) == .finish(.failedAfterRetry))
    }

    @Test func delayedJobsComeOutInDueOrder() {
        let group = PushGroup(label: "t", headers: [], body: [1], resendUnknown: false)
        var heap = DelayedJobs(capacity: 16)
        let dues: [UInt64] = [50, 10, 40, 30, 20, 60, 5]
        for (index, due) in dues.enumerated() {
            var job = PushJob(token: DeviceToken(bytes: [UInt8(index)])!, group: group, id: UInt64(index))
            job.notBefore = due
            heap.insert(job)
        }
        #expect(heap.popDue(now: 4) == nil)
        var order: [UInt64] = []
        while let job = heap.popDue(now: 100) { order.append(job.notBefore) }
        #expect(order == dues.sorted())
    }

    @Test func jobRingKeepsOrderAndTakesJobsBackAtTheFront() {
        let group = PushGroup(label: "t", headers: [], body: [1], resendUnknown: false)
        var ring = JobRing(capacity: 4)
        for id in 0..<4 { ring.pushBack(PushJob(token: DeviceToken(bytes: [1])!, group: group, id: UInt64(id))) }
        #expect(ring.free == 0)
        let first = ring.popFront()!
        #expect(first.id == 0)
        ring.pushFront(first)
        #expect((0..<4).map { _ in ring.popFront()!.id } == [0, 1, 2, 3])
        #expect(ring.isEmpty)
    }

    @Test func latencyPercentiles() {
        var histogram = LatencyHistogram()
        for ms in 1...100 { histogram.record(nanoseconds: UInt64(ms) * 1_000_000) }
        #expect(abs(histogram.percentile(0.5) - 50) < 0.1)
        #expect(abs(histogram.percentile(0.99) - 99) < 0.1)
        histogram.record(nanoseconds: 5_000_000_000)
        #expect(histogram.percentile(1.0) > 4_999)
    }

    @Test("the latency distribution spans the smallest to the largest latency in log-spaced buckets that hold every push")
    func latencyDistributionIsLogSpacedAndComplete() {
        var histogram = LatencyHistogram()
        for ms in [1, 1, 2, 10, 100, 1_000, 5_000] { histogram.record(nanoseconds: UInt64(ms) * 1_000_000) }
        let buckets = histogram.distribution(buckets: 20)
        #expect(buckets.count == 20)
        #expect(buckets.map(\.count).reduce(0, +) == 7)
        #expect(buckets.first?.count == 2, "both 1 ms pushes fall in the first bucket")
        #expect(buckets.last.map { abs($0.upperMilliseconds - 5_005) < 0.001 && $0.count == 1 } == true, "\(buckets)")
        let ratios = zip(buckets, buckets.dropFirst()).map { $1.upperMilliseconds / $0.upperMilliseconds }
        #expect(ratios.allSatisfy { abs($0 - ratios[0]) < 1e-6 }, "equal ratios, not equal widths: \(ratios)")
    }

    @Test("the latency distribution is empty with nothing recorded, and one bucket when every latency is alike")
    func latencyDistributionEdgeCases() {
        var histogram = LatencyHistogram()
        #expect(histogram.distribution().isEmpty)
        for _ in 0..<3 { histogram.record(nanoseconds: 2_000_000) }
        let buckets = histogram.distribution()
        #expect(buckets.count == 1 && buckets.first?.count == 3, "\(buckets)")
        #expect(buckets.first.map { abs($0.upperMilliseconds - histogram.percentile(0.5)) < 0.001 } == true)
    }
}
