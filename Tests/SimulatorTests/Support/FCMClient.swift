import Crypto
import FCM
import HTTP2
import HTTP2TestSupport
import JSONCore
import Simulator
import Vocabulary

/// FCM against a `RunningSimulator`, with the raw HTTP/2 client: the service account read from the
/// file the simulator wrote, assertions signed with our RS256 signer, the exchange and sends.
struct FCMClient {
    let sim: RunningSimulator
    let account: ServiceAccount
    let key: RSASigningKey

    init(_ sim: RunningSimulator) throws {
        self.sim = sim
        account = try ServiceAccount(json: readFile(sim.simulator.fcmServiceAccountFile))
        key = try RSASigningKey(pem: Array(account.privateKeyPEM.utf8), source: "private_key of \(sim.simulator.fcmServiceAccountFile)")
    }

    /// A signed assertion; `header` and `claims` replace the account's own (a test's wrong ones).
    func assertion(issuedAt: Int64 = WallClock.seconds(), header: [UInt8]? = nil, claims: [UInt8]? = nil,
                   signer: RSASigningKey? = nil) throws -> String {
        try CompactJWT.sign(header: header ?? account.assertionHeader, claims: claims ?? (try account.assertionClaims(issuedAt: issuedAt)),
                            with: signer ?? key)
    }

    static func tokenRequest(body: [UInt8], contentType: String? = OAuthTokenRequest.contentType) -> ClientRequest {
        ClientRequest(method: "POST", path: "/token", headers: contentType.map { [("content-type", $0)] } ?? [], body: body)
    }

    static func send(_ body: [UInt8], bearer: String?, project: String = SimulatorCertificates.fcmProjectID) -> ClientRequest {
        var headers: [(name: String, value: String)] = [("content-type", "application/json")]
        if let bearer { headers.append(("authorization", "Bearer " + bearer)) }
        return ClientRequest(method: "POST", path: FCMEndpoint.sendPath(projectID: project), headers: headers, body: body)
    }

    /// Sends `requests` on one connection to the push port, without an APNs provider token. The
    /// first goes alone: the port speaks APNs' one stream until a connection's first request, and
    /// FCM's 100 (`fcmMaximumStreams`) from then on.
    func perform(_ requests: [ClientRequest]) throws -> [ClientResult] {
        let options = ClientConnectionOptions(host: "127.0.0.1", port: sim.port, tls: try TLSConfiguration.client(caFile: sim.certificates.ca))
        return try OneShotClient.perform(requests, options: options, authorization: nil, timeout: .seconds(20), streamsUntilFirstAnswer: 1).get()
    }

    /// An access token from the simulator's `/token`.
    func accessToken() throws -> AccessToken {
        let answer = try perform([Self.tokenRequest(body: OAuthTokenRequest.body(assertion: try assertion()))])[0]
        guard case let .response(status, _, body) = answer, case let .granted(token) = OAuthTokenResponse(status: status, body: body) else {
            throw FCMTestFailure("no token: \(answer)")
        }
        return token
    }

    /// A Live Update body for `token`, as a sender builds it from a group's template.
    static func liveUpdate(token: String, data: [(key: String, value: String)]? = nil, ttl: Duration = .seconds(60)) throws -> [UInt8] {
        let fields = try data ?? LiveUpdateData(eventKey: "eew-1", serial: 1, kind: .start, group: "region:301",
                                                contentState: Array(#"{"forecastIntensity":"5-"}"#.utf8), alertTitle: "緊急地震速報").fields
        let template = try FCMMessageTemplate(data: fields, android: FCMAndroidOptions(priority: .high, ttl: ttl, collapseKey: "eew-1"))
        return template.body(token: DeviceToken(bytes: Array(token.utf8))!)
    }
}

struct FCMTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension ClientResult {
    /// The answer as a sender reads it.
    var fcm: FCMResponse? {
        guard case let .response(status, headers, body) = self else { return nil }
        return FCMResponse(status: status, retryAfter: headers.first { $0.name == "retry-after" }?.value, body: body)
    }

    /// A token endpoint's answer.
    var oauth: OAuthTokenResponse? {
        guard case let .response(status, _, body) = self else { return nil }
        return OAuthTokenResponse(status: status, body: body)
    }
}

/// A phone's registration token in FCM's alphabet, distinct per `name`.
func fcmToken(_ name: String) -> String { "f" + name + ":APA91b" + String(repeating: "x", count: 140) }
