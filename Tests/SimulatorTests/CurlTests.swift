import Crypto
import Simulator
import Testing

/// Plain `curl --http2` requests shaped like Apple's documentation ("Sending push notifications
/// using command-line tools") work against the simulator: it is a look-alike, not a private protocol.
@Suite struct CurlTests {
    let dir = temporaryDirectory("sokuho-curl")

    /// Runs curl, printing the response headers to stdout; returns them with the body.
    func curl(_ url: String, _ arguments: [String]) -> (status: Int32, headers: String, body: String, err: String) {
        let bodyPath = dir + "/body-\(UInt32.random(in: 0...UInt32.max))"
        let run = ChildProcess.run("curl", ["-sS", "--http2", "--cacert", sharedCertificates.ca, "-D", "-", "-o", bodyPath,
                                            "--max-time", "20"] + arguments + [url])
        return (run.status, run.out, String(decoding: readFile(bodyPath), as: UTF8.self), run.err)
    }

    /// The value of header `name` in curl's `-D -` output (HTTP/2 names are lowercase).
    func header(_ name: String, in headers: String) -> String? {
        headers.split(separator: "\r\n").first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) }
    }

    @Test func aDevicePushAsAppleDocumentsIt() throws {
        try withSimulator { sim in
            let payload = writeFile(dir, "payload.json", updateBody())
            let token = deviceToken("d1")
            let answer = curl("https://127.0.0.1:\(sim.port)/3/device/\(token)", [
                "-H", "apns-topic: \(testBundle).push-type.liveactivity", "-H", "apns-push-type: liveactivity",
                "-H", "apns-priority: 10", "-H", "authorization: \(try sim.authorization())", "--data-binary", "@" + payload,
            ])
            #expect(answer.status == 0, "\(answer.err)")
            #expect(answer.headers.hasPrefix("HTTP/2 200"), "\(answer.headers)")
            #expect(header("apns-id", in: answer.headers)?.utf8.count == 36, "\(answer.headers)")
            #expect(sim.counters.accepted == 1)
        }
    }

    @Test func aChannelCreateThenABroadcast() throws {
        try withSimulator { sim in
            let authorization = try sim.authorization()
            let created = curl("https://127.0.0.1:\(sim.managePort)/1/apps/\(testBundle)/channels", [
                "-H", "authorization: \(authorization)", "-H", "apns-request-id: 0a1b2c3d-0000-4000-8000-00000000abcd",
                "--data-binary", #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#,
            ])
            #expect(created.status == 0, "\(created.err)")
            #expect(created.headers.hasPrefix("HTTP/2 201"), "\(created.headers)")
            let channel = try #require(header("apns-channel-id", in: created.headers), "\(created.headers)")
            #expect(channel.utf8.count == 24)
            #expect(header("apns-request-id", in: created.headers) == "0a1b2c3d-0000-4000-8000-00000000abcd")

            let payload = writeFile(dir, "broadcast.json", updateBody())
            let sent = curl("https://127.0.0.1:\(sim.port)/4/broadcasts/apps/\(testBundle)", [
                "-H", "apns-channel-id: \(channel)", "-H", "apns-push-type: liveactivity", "-H", "apns-expiration: 0",
                "-H", "apns-priority: 10", "-H", "authorization: \(authorization)", "--data-binary", "@" + payload,
            ])
            #expect(sent.status == 0, "\(sent.err)")
            #expect(sent.headers.hasPrefix("HTTP/2 200"), "\(sent.headers)")
            #expect(sim.counters.accepted == 1)
        }
    }

    @Test func aRefusalCarriesAPNsJSONReason() throws {
        try withSimulator { sim in
            let payload = writeFile(dir, "payload.json", updateBody())
            let answer = curl("https://127.0.0.1:\(sim.port)/3/device/\(deviceToken("d2"))", [
                "-H", "apns-topic: \(testBundle).push-type.liveactivity", "-H", "apns-push-type: liveactivity",
                "--data-binary", "@" + payload,
            ])
            #expect(answer.headers.hasPrefix("HTTP/2 403"), "\(answer.headers)")
            #expect(answer.body == #"{"reason":"MissingProviderToken"}"#)
        }
    }
}
