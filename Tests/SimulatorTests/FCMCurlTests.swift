import FCM
import JSONCore
import Simulator
import Testing

/// The simulator's FCM side with plain `curl --http2`, as Google's documentation shows the calls:
/// an access token for a JWT signed by our RS256 signer, then a send, then a refusal.
@Suite struct FCMCurlTests {
    let dir = temporaryDirectory("sokuho-fcm-curl")

    func curl(_ url: String, _ arguments: [String]) -> (status: Int32, headers: String, body: [UInt8], err: String) {
        let bodyPath = dir + "/body-\(UInt32.random(in: 0...UInt32.max))"
        let run = ChildProcess.run("curl", ["-sS", "--http2", "--cacert", sharedCertificates.ca, "-D", "-", "-o", bodyPath,
                                            "--max-time", "20"] + arguments + [url])
        return (run.status, run.out, readFile(bodyPath), run.err)
    }

    @Test("curl exchanges an RS256 assertion for a token, sends with it, and reads FCM's refusal of a reserved key")
    func anExchangeASendAndARefusalWithCurl() throws {
        try withSimulator { sim in
            let client = try FCMClient(sim)
            let form = writeFile(dir, "form.txt", OAuthTokenRequest.body(assertion: try client.assertion()))
            let exchange = curl(client.account.tokenURI, ["--data-binary", "@" + form, "-H", "content-type: \(OAuthTokenRequest.contentType)"])
            #expect(exchange.status == 0, "\(exchange.err)")
            #expect(exchange.headers.hasPrefix("HTTP/2 200"), "\(exchange.headers)")
            guard case let .granted(token) = OAuthTokenResponse(status: 200, body: exchange.body) else {
                Issue.record("not granted: \(String(decoding: exchange.body, as: UTF8.self))"); return
            }

            let url = "https://127.0.0.1:\(sim.port)" + FCMEndpoint.sendPath(projectID: client.account.projectID)
            let good = writeFile(dir, "good.json", try FCMClient.liveUpdate(token: fcmToken("curl")))
            let sent = curl(url, ["-H", "authorization: \(token.authorization)", "-H", "content-type: application/json", "--data-binary", "@" + good])
            #expect(sent.headers.hasPrefix("HTTP/2 200"), "\(sent.headers)")
            #expect(FCMResponse(status: 200, retryAfter: nil, body: sent.body).messageName?.hasPrefix("projects/sokuho-simulator/messages/") == true)

            let reserved = writeFile(dir, "reserved.json", #"{"message":{"token":"\#(fcmToken("curl"))","data":{"from":"x"}}}"#)
            let refused = curl(url, ["-H", "authorization: \(token.authorization)", "-H", "content-type: application/json", "--data-binary", "@" + reserved])
            #expect(refused.headers.hasPrefix("HTTP/2 400"), "\(refused.headers)")
            let error = FCMResponse(status: 400, retryAfter: nil, body: refused.body)
            #expect(error.error.status == "INVALID_ARGUMENT" && error.error.errorCode == "INVALID_ARGUMENT" && error.failedField == "message.data")

            let anonymous = curl(url, ["-H", "content-type: application/json", "--data-binary", "@" + good])
            #expect(anonymous.headers.hasPrefix("HTTP/2 401"), "\(anonymous.headers)")
            #expect(sim.counters.fcmAccepted == 1 && sim.counters.fcmTokensGranted == 1)
        }
    }

    @Test("sokuho simulator names its service-account file on its start line beside the fields it printed before, and refuses an unknown --fcm-fail code naming the known ones")
    func theCommandPrintsTheServiceAccount() throws {
        let certDir = temporaryDirectory("sokuho-fcm-cli")
        let run = sokuho(["simulator", "--cert-dir", certDir, "--duration", "0", "--fcm-quota", "5", "--fcm-fail", "UNAVAILABLE=0.5"])
        #expect(run.code == .success, "\(run)")
        let line = try JSONParser.parse(run.line)
        let file = try #require(line["fcmServiceAccountFile"]?.stringValue, "\(run.line)")
        #expect(file.hasPrefix(certDir + "/fcm-service-account-") && line["fcmProjectId"]?.stringValue == "sokuho-simulator")
        let account = try ServiceAccount(json: readFile(file))
        #expect(account.tokenURI == "https://127.0.0.1:\(line["port"]?.int64Value ?? 0)/token")
        #expect(line["caFile"]?.stringValue == certDir + "/ca.pem")  // the existing fields are still there
        let bad = sokuho(["simulator", "--cert-dir", certDir, "--duration", "0", "--fcm-fail", "NOPE=1"])
        #expect(bad.code != .success && bad.err.contains("UNAVAILABLE"), "\(bad)")
    }
}
