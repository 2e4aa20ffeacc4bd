import Crypto
import FCM
import HTTP2TestSupport
import JSONCore
@testable import Simulator
import IO
import Testing
import Vocabulary

/// Issue 23: the simulator plays FCM HTTP v1 on its push port — a service account in Google's
/// layout, the OAuth exchange with an RS256 assertion, and sends checked and answered as FCM does —
/// driven over real HTTP/2 with the raw client.
@Suite struct FCMSimulatorTests {
    @Test("the written service account points at the simulator, and an exchange then a send are accepted")
    func anExchangeThenASend() throws {
        try withSimulator { sim in
            let client = try FCMClient(sim)
            #expect(client.account.tokenEndpoint == HTTPSEndpoint(host: "127.0.0.1", port: sim.port, path: "/token"))
            #expect(client.account.projectID == SimulatorCertificates.fcmProjectID)
            let token = try client.accessToken()
            #expect(token.lifetime == .seconds(3599))
            let answer = try client.perform([FCMClient.send(try FCMClient.liveUpdate(token: fcmToken("a")), bearer: token.value)])[0]
            let response = try #require(answer.fcm)
            #expect(response.status == 200 && response.action == .delivered, "\(answer)")
            // Google's shape: `0:<microseconds>%<16 hex digits>`, the microseconds about now.
            let id = try #require(response.messageName?.split(separator: "/").last)
            let parts = id.dropFirst(2).split(separator: "%")
            #expect(id.hasPrefix("0:") && parts.count == 2 && parts[1].count == 16 && parts[1].allSatisfy(\.isHexDigit), "\(id)")
            let microseconds = try #require(Int64(parts[0]))
            #expect(abs(microseconds / 1_000_000 - WallClock.seconds()) < 60, "\(id)")
            #expect(response.messageName == "projects/sokuho-simulator/messages/\(id)")
            let counters = sim.counters
            #expect(counters.fcmAccepted == 1 && counters.fcmTokensGranted == 1 && counters.accepted == 0)
        }
    }

    @Test("assertions Google would refuse get its OAuth errors, and nothing is granted")
    func assertionsAreCheckedAsGoogleChecksThem() throws {
        try withSimulator { sim in
            let client = try FCMClient(sim)
            let now = WallClock.seconds(), account = client.account
            func claims(aud: String = account.tokenURI, scope: String = ServiceAccount.messagingScope, iat: Int64 = now, exp: Int64 = now + 3600) -> [UInt8] {
                Array(#"{"iss":"\#(account.clientEmail)","scope":"\#(scope)","aud":"\#(aud)","iat":\#(iat),"exp":\#(exp)}"#.utf8)
            }
            let other = try RSASigningKey.generate()
            let cases: [(request: ClientRequest, error: String)] = [
                (FCMClient.tokenRequest(body: OAuthTokenRequest.body(assertion: try client.assertion(signer: other))), "invalid_grant"),
                (FCMClient.tokenRequest(body: OAuthTokenRequest.body(assertion: try client.assertion(header: Array(#"{"alg":"RS256","typ":"JWT","kid":"other"}"#.utf8)))), "invalid_grant"),
                (FCMClient.tokenRequest(body: OAuthTokenRequest.body(assertion: try client.assertion(claims: claims(aud: "https://oauth2.googleapis.com/token")))), "invalid_grant"),
                (FCMClient.tokenRequest(body: OAuthTokenRequest.body(assertion: try client.assertion(claims: claims(scope: "https://www.googleapis.com/auth/userinfo.email")))), "invalid_scope"),
                (FCMClient.tokenRequest(body: OAuthTokenRequest.body(assertion: try client.assertion(claims: claims(exp: now + 3601)))), "invalid_grant"),
                (FCMClient.tokenRequest(body: OAuthTokenRequest.body(assertion: try client.assertion(claims: claims(iat: now - 7200, exp: now - 3600)))), "invalid_grant"),
                (FCMClient.tokenRequest(body: Array("grant_type=password&assertion=x".utf8)), "unsupported_grant_type"),
                (FCMClient.tokenRequest(body: OAuthTokenRequest.body(assertion: try client.assertion()), contentType: "application/json"), "invalid_request"),
                (FCMClient.tokenRequest(body: OAuthTokenRequest.body(assertion: "not.a.jwt")), "invalid_grant"),
            ]
            let answers = try client.perform(cases.map(\.request))
            for (answer, expected) in zip(answers, cases.map(\.error)) {
                guard case let .refused(status, body)? = answer.oauth else { Issue.record("expected \(expected): \(answer)"); continue }
                #expect(status == 400 && body.error == expected, "\(body)")
            }
            #expect(sim.counters.fcmTokensGranted == 0)
            #expect(sim.counters.fcmTokensRefused.values.reduce(0, +) == cases.count)
        }
    }

    @Test("a send without a valid access token is 401 UNAUTHENTICATED, also once its token expired mid-event, and a fresh token sends again")
    func bearerTokensAreCheckedAndExpire() throws {
        try withSimulator { sim in
            let client = try FCMClient(sim)
            let body = try FCMClient.liveUpdate(token: fcmToken("b"))
            let token = try client.accessToken()
            let before = try client.perform([FCMClient.send(body, bearer: nil), FCMClient.send(body, bearer: "ya29.forged"), FCMClient.send(body, bearer: token.value)])
            #expect(before.map { $0.fcm?.action } == [.refreshAccessToken, .refreshAccessToken, .delivered])
            #expect(before[0].fcm?.error.status == "UNAUTHENTICATED" && before[0].fcm?.error.errorCode == nil)
            sim.simulator.expireFCMAccessTokens()
            let after = try client.perform([FCMClient.send(body, bearer: token.value), FCMClient.send(body, bearer: try client.accessToken().value)])
            #expect(after.map { $0.fcm?.action } == [.refreshAccessToken, .delivered])
            #expect(sim.counters.fcmRejected["UNAUTHENTICATED"] == 3 && sim.counters.fcmAccepted == 2)
        }
    }

    @Test("bodies FCM refuses are 400 INVALID_ARGUMENT naming the field, and a bad token is the one that prunes")
    func badBodiesNameTheirField() throws {
        try withSimulator { sim in
            let client = try FCMClient(sim)
            let bearer = try client.accessToken().value
            let token = fcmToken("c")
            func message(_ inner: String) -> [UInt8] { Array(#"{"message":{"token":"\#(token)",\#(inner)}}"#.utf8) }
            let cases: [(body: [UInt8], field: String?, action: FCMResponseAction)] = [
                (message(#""data":{"from":"x"}"#), "message.data", .fixRequest),
                (message(#""data":{"google.c.a.e":"1"}"#), "message.data", .fixRequest),
                (message(#""data":{"serial":2}"#), "message.data[0].value", .fixRequest),
                (message(#""android":{"ttl":"60"}"#), "message.android.ttl", .fixRequest),
                (message(#""android":{"ttl":"2419201s"}"#), "message.android.ttl", .fixRequest),
                (message(#""android":{"priority":"high"}"#), "message.android.priority", .fixRequest),
                (message(#""topic":"news""#), "message", .fixRequest),
                (message(#""android":{"colapse_key":"x"}"#), "message.android", .fixRequest),
                (Array(#"{"message":{"data":{}}}"#.utf8), "message", .fixRequest),
                // Google names no field for a bad token, only says so in the message.
                (Array(#"{"message":{"token":"has space"}}"#.utf8), nil, .removeTokenBehindBreaker),
                (message(#""data":{"k":"\#(String(repeating: "x", count: 4096))"}"#), "message", .fixRequest),
            ]
            let answers = try client.perform(cases.map { FCMClient.send($0.body, bearer: bearer) })
            for (answer, expected) in zip(answers, cases) {
                let response = try #require(answer.fcm)
                #expect(response.status == 400 && response.error.status == "INVALID_ARGUMENT", "\(answer)")
                #expect(response.failedField == expected.field && response.action == expected.action, "\(String(decoding: expected.body.prefix(80), as: UTF8.self)): \(response.error)")
            }
            // The lowerCamelCase spellings Google's parser takes are taken too.
            let camel = try client.perform([FCMClient.send(message(#""android":{"collapseKey":"k","directBootOk":true}"#), bearer: bearer)])
            #expect(camel[0].fcm?.action == .delivered, "\(camel[0])")
        }
    }

    @Test("an unregistered token is 404 UNREGISTERED, another project's 403 SENDER_ID_MISMATCH, another project's path 403 PERMISSION_DENIED")
    func tokensAndProjectsOfOthers() throws {
        try withSimulator({ $0.fcmUnregisteredTokens = [fcmToken("gone")]; $0.fcmForeignTokens = [fcmToken("theirs")] }) { sim in
            let client = try FCMClient(sim)
            let bearer = try client.accessToken().value
            let answers = try client.perform([
                FCMClient.send(try FCMClient.liveUpdate(token: fcmToken("gone")), bearer: bearer),
                FCMClient.send(try FCMClient.liveUpdate(token: fcmToken("theirs")), bearer: bearer),
                FCMClient.send(try FCMClient.liveUpdate(token: fcmToken("d")), bearer: bearer, project: "someone-else"),
            ])
            #expect(answers.map { $0.fcm?.status } == [404, 403, 403])
            #expect(answers.map { $0.fcm?.action } == [.removeToken, .removeTokenBehindBreaker, .halt])
            #expect(answers[2].fcm?.error.status == "PERMISSION_DENIED" && answers[2].fcm?.error.errorCode == nil)
        }
    }

    @Test("over the project's quota a send is 429 QUOTA_EXCEEDED with a Retry-After inside the minute, pausing the project")
    func theQuotaIsPerProjectPerMinute() throws {
        try withSimulator({ $0.fcmQuotaPerMinute = 3 }) { sim in
            let client = try FCMClient(sim)
            let bearer = try client.accessToken().value
            let body = try FCMClient.liveUpdate(token: fcmToken("e"))
            let answers = try client.perform(Array(repeating: FCMClient.send(body, bearer: bearer), count: 4))
            #expect(answers.prefix(3).allSatisfy { $0.fcm?.action == .delivered })
            let refused = try #require(answers[3].fcm)
            #expect(refused.status == 429 && refused.error.errorCode == "QUOTA_EXCEEDED" && refused.action == .pauseProject)
            let wait = try #require(refused.retryAfter)
            #expect(wait >= .seconds(1) && wait <= .seconds(60))
        }
    }

    @Test("an injected UNAVAILABLE is 503 with the configured Retry-After, for the sender to retry")
    func injectedErrors() throws {
        try withSimulator({ $0.fcmFaults = [("UNAVAILABLE", 1)]; $0.retryAfterSeconds = 4 }) { sim in
            let client = try FCMClient(sim)
            let answer = try client.perform([FCMClient.send(try FCMClient.liveUpdate(token: fcmToken("f")), bearer: try client.accessToken().value)])[0]
            #expect(answer.fcm?.status == 503 && answer.fcm?.action == .retry && answer.fcm?.retryAfter == .seconds(4), "\(answer)")
            #expect(sim.counters.fcmRejected["UNAVAILABLE"] == 1)
        }
    }

    @Test func theQuotaWindowSlidesBySecondsAndSaysHowLongToWait() {
        var window = FCMQuotaWindow(limit: 3)
        let start = UInt64(1_000) * 1_000_000_000
        func at(_ seconds: Double) -> MonotonicInstant { MonotonicInstant(nanoseconds: start + UInt64(seconds * 1e9)) }
        #expect(window.admit(at: at(0)) == nil && window.admit(at: at(0.5)) == nil && window.admit(at: at(30)) == nil)
        #expect(window.admit(at: at(30.2)) == .seconds(30))
        #expect(window.admit(at: at(59.9)) == .seconds(1))
        #expect(window.admit(at: at(60)) == nil)  // second 0's two left the window
        #expect(window.admit(at: at(60.1)) == nil)
        #expect(window.admit(at: at(60.2)) == .seconds(30))
    }
}
