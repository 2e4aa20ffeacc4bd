import HTTP2TestSupport
import Simulator
import Testing

/// Issue 14, "A simulator as strict as Apple": each rule where the simulator used to be more lenient
/// than APNs, sent as a raw HTTP/2 request (so no sender code can tidy it up first), asserting the
/// status and reason Apple documents, and that the correct form is still accepted. The rule's source
/// is the APNs reference kept beside the repository (APNS.md, section named on each test); where
/// Apple's answer is unconfirmed the simulator takes the stricter one, as its source comment says.
@Suite struct StrictSimulatorTests {
    let noMessageStored = Array(#"{"message-storage-policy":0,"push-type":"LiveActivity"}"#.utf8)
    let requestID = "0a1b2c3d-0000-4000-8000-00000000c0de"

    func device(_ token: String, _ headers: [(name: String, value: String)], body: [UInt8] = updateBody()) -> ClientRequest {
        ClientRequest(method: "POST", path: "/3/device/" + token, headers: headers, body: body)
    }

    func broadcast(_ channel: String, bundle: String = testBundle, priority: String? = "10", pushType: String = "liveactivity",
                   extra: [(name: String, value: String)] = [], body: [UInt8] = updateBody()) -> ClientRequest {
        var headers: [(name: String, value: String)] = [("apns-channel-id", channel), ("apns-push-type", pushType), ("apns-expiration", "0")]
        if let priority { headers.append(("apns-priority", priority)) }
        return ClientRequest(method: "POST", path: "/4/broadcasts/apps/" + bundle, headers: headers + extra, body: body)
    }

    func createChannel(_ body: [UInt8], bundle: String = testBundle, extra: [(name: String, value: String)] = []) -> ClientRequest {
        ClientRequest(method: "POST", path: "/1/apps/\(bundle)/channels", headers: extra, body: body)
    }

    /// A new No-Message-Stored channel of `testBundle`, created with a raw request.
    func channel(on sim: RunningSimulator) throws -> String {
        let created = try sim.perform([createChannel(noMessageStored)], management: true)
        #expect(created[0].status == 201, "\(created[0])")
        return try #require(created[0].header("apns-channel-id"))
    }

    /// APNS.md §9.1 (broadcast headers): "`apns-priority` | yes | 10 / 5 / 1".
    @Test("a broadcast without apns-priority is refused with 400 BadPriority, and one with it is accepted")
    func aBroadcastNeedsAPriority() throws {
        try withSimulator { sim in
            let id = try channel(on: sim)
            let results = try sim.perform([broadcast(id, priority: nil), broadcast(id, priority: "5")])
            #expect(results[0].status == 400 && results[0].reason == "BadPriority", "\(results[0])")
            #expect(results[1].status == 200, "\(results[1])")
            #expect(sim.counters.accepted == 1)
        }
    }

    /// APNS.md §3: `apns-push-type` values are `alert`, `liveactivity`, … in lower case.
    @Test("apns-push-type Alert on a device push is refused with 400 InvalidPushType, and alert is accepted")
    func pushTypesAreLowerCase() throws {
        try withSimulator { sim in
            let alert = Array(#"{"aps":{"alert":{"title":"M5.2","body":"Shaking expected"}}}"#.utf8)
            let live = liveActivityHeaders().map { $0.name == "apns-push-type" ? ($0.name, "Liveactivity") : $0 }
            let results = try sim.perform([
                device(deviceToken("d1"), [("apns-push-type", "Alert"), ("apns-topic", testBundle)], body: alert),
                device(deviceToken("d1"), live),
                device(deviceToken("d1"), [("apns-push-type", "alert"), ("apns-topic", testBundle)], body: alert),
                device(deviceToken("d1"), liveActivityHeaders()),
            ])
            #expect(results[0].status == 400 && results[0].reason == "InvalidPushType", "\(results[0])")
            #expect(results[1].status == 400 && results[1].reason == "InvalidPushType", "\(results[1])")
            #expect(results[2].status == 200, "\(results[2])")
            #expect(results[3].status == 200, "\(results[3])")
        }
    }

    /// APNS.md §9.1: broadcast `apns-push-type` "The table says "`Liveactivity`"; the samples use
    /// `liveactivity`"; §9.3: "only `LiveActivity` allowed". Those spellings, and no others.
    @Test("a broadcast takes the push-type spellings Apple documents for it and refuses LIVEACTIVITY with 400 InvalidPushType")
    func broadcastPushTypeSpellings() throws {
        try withSimulator { sim in
            let id = try channel(on: sim)
            let results = try sim.perform([broadcast(id, pushType: "LIVEACTIVITY"), broadcast(id, pushType: "liveActivity"),
                                           broadcast(id), broadcast(id, pushType: "Liveactivity"), broadcast(id, pushType: "LiveActivity")])
            #expect(results[0].status == 400 && results[0].reason == "InvalidPushType", "\(results[0])")
            #expect(results[1].status == 400 && results[1].reason == "InvalidPushType", "\(results[1])")
            #expect(results[2...].allSatisfy { $0.status == 200 }, "\(results)")
        }
    }

    /// APNS.md §9.2: create body `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`;
    /// §9.3: "`InvalidPushType` | wrong push type; only `LiveActivity` allowed".
    @Test("channel creation with push-type liveactivity is refused with 400 InvalidPushType, and LiveActivity creates one")
    func channelCreationTakesLiveActivity() throws {
        try withSimulator { sim in
            let results = try sim.perform([createChannel(Array(#"{"message-storage-policy":0,"push-type":"liveactivity"}"#.utf8)),
                                           createChannel(noMessageStored)], management: true)
            #expect(results[0].status == 400 && results[0].reason == "InvalidPushType", "\(results[0])")
            #expect(results[1].status == 201 && results[1].header("apns-channel-id") != nil, "\(results[1])")
        }
    }

    /// APNS.md §9.1: "`apns-request-id` | optional | UUID string, echoed back"; §9.2: "optional
    /// `apns-request-id` (canonical UUID, echoed or generated)". Reason BadMessageId is the
    /// simulator's choice (§9.3 "bad `apns-id`"; Apple names none for this header).
    @Test("a non-UUID apns-request-id is refused with 400 BadMessageId on broadcasts and channel requests, and a UUID is echoed")
    func requestIDsAreUUIDs() throws {
        try withSimulator { sim in
            let id = try channel(on: sim)
            let bad = [("apns-request-id", "request-42")]
            let upper = [("apns-request-id", requestID.uppercased())]
            let good = [("apns-request-id", requestID)]
            let management = try sim.perform([
                createChannel(noMessageStored, extra: bad),
                ClientRequest(method: "GET", path: "/1/apps/\(testBundle)/channels", headers: [("apns-channel-id", id)] + bad),
                ClientRequest(method: "GET", path: "/1/apps/\(testBundle)/all-channels", headers: bad),
                createChannel(noMessageStored, extra: good),
            ], management: true)
            for result in management[0..<3] {
                #expect(result.status == 400 && result.reason == "BadMessageId", "\(result)")
                #expect(result.header("apns-request-id") != "request-42", "a malformed ID is not echoed: \(result)")
            }
            #expect(management[3].status == 201 && management[3].header("apns-request-id") == requestID, "\(management[3])")

            let pushes = try sim.perform([broadcast(id, extra: bad), broadcast(id, extra: upper), broadcast(id, extra: good)])
            #expect(pushes[0].status == 400 && pushes[0].reason == "BadMessageId", "\(pushes[0])")
            #expect(pushes[1].status == 400 && pushes[1].reason == "BadMessageId", "\(pushes[1])")
            #expect(pushes[2].status == 200 && pushes[2].header("apns-request-id") == requestID, "\(pushes[2])")
        }
    }

    /// APNS.md §6: "Don't assume a device token length." Tokens are 32 bytes today; the simulator
    /// assumes APNs refuses shorter ones with BadDeviceToken (§4), the stricter reading.
    @Test("an 8-byte or 31-byte device token is refused with 400 BadDeviceToken, and a 32-byte one is accepted")
    func deviceTokensHaveAtLeast32Bytes() throws {
        try withSimulator { sim in
            let results = try sim.perform([device(String(repeating: "ab", count: 8), liveActivityHeaders()),
                                           device(String(repeating: "ab", count: 31), liveActivityHeaders()),
                                           device(String(repeating: "ab", count: 32), liveActivityHeaders()),
                                           device(String(repeating: "ab", count: 100), liveActivityHeaders())])
            #expect(results[0].status == 400 && results[0].reason == "BadDeviceToken", "\(results[0])")
            #expect(results[1].status == 400 && results[1].reason == "BadDeviceToken", "\(results[1])")
            #expect(results[2].status == 200, "\(results[2])")
            #expect(results[3].status == 200, "push-to-start and update tokens can be longer: \(results[3])")
        }
    }

    /// APNS.md §9.3: "`BadRequestParams` | unrecognised attribute in the JSON body" vs
    /// "`BadRequestPayload` | unparseable JSON body".
    @Test("well-formed JSON with bad Live Activity content is refused with 400 BadRequestParams, and unparseable JSON with BadRequestPayload")
    func badContentIsBadRequestParams() throws {
        try withSimulator { sim in
            let id = try channel(on: sim)
            let noEvent = Array(#"{"aps":{"timestamp":1700000000,"content-state":{"intensity":5}}}"#.utf8)
            let stringTimestamp = Array(#"{"aps":{"timestamp":"now","event":"update","content-state":{"intensity":5}}}"#.utf8)
            let noAPS = Array(#"{"event":"update"}"#.utf8)
            let broken = Array(#"{"aps":{"event":"update""#.utf8)
            let token = deviceToken("d2")
            let results = try sim.perform([
                device(token, liveActivityHeaders(), body: noEvent),
                device(token, liveActivityHeaders(), body: stringTimestamp),
                device(token, liveActivityHeaders(), body: noAPS),
                broadcast(id, body: noEvent),
                device(token, liveActivityHeaders(), body: broken),
                broadcast(id, body: broken),
                device(token, liveActivityHeaders()),
                broadcast(id),
            ])
            for result in results[0..<4] { #expect(result.status == 400 && result.reason == "BadRequestParams", "\(result)") }
            for result in results[4..<6] { #expect(result.status == 400 && result.reason == "BadRequestPayload", "\(result)") }
            #expect(results[6].status == 200 && results[7].status == 200, "\(results)")
        }
    }

    /// APNS.md §9.3: "403 | `TopicMismatch` | bundle IDs in the token or certificate don't include
    /// the topic in the path"; "400 | `TopicDisallowed` | topic not allowed; no push-type suffix on
    /// the bundle ID".
    @Test("a broadcast to another app's channel is refused with 403 TopicMismatch, a suffixed bundle ID with 400 TopicDisallowed")
    func anotherAppsBroadcastIsTopicMismatch() throws {
        try withSimulator({ $0.bundles = [testBundle] }) { sim in
            let id = try channel(on: sim)
            let results = try sim.perform([broadcast(id, bundle: "com.example.other"),
                                           broadcast(id, bundle: testBundle + ".push-type.liveactivity"),
                                           broadcast(id)])
            #expect(results[0].status == 403 && results[0].reason == "TopicMismatch", "\(results[0])")
            #expect(results[1].status == 400 && results[1].reason == "TopicDisallowed", "\(results[1])")
            #expect(results[2].status == 200, "\(results[2])")
            let listed = try sim.perform([ClientRequest(method: "GET", path: "/1/apps/com.example.other/all-channels", headers: [])],
                                         management: true)
            #expect(listed[0].status == 403 && listed[0].reason == "TopicMismatch", "\(listed[0])")
        }
    }
}
