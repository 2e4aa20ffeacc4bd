import APNs
import Crypto
@testable import Simulator
import Testing

/// APNs' request checks as the simulator applies them, without sockets.
@Suite struct RequestRulesTests {
    func refusal(_ body: () throws(RequestRules.Refusal) -> Void) -> Reason? {
        do throws(RequestRules.Refusal) { try body(); return nil } catch { return error.reason }
    }

    func route(_ method: String, _ path: String, management: Bool = false) -> Result<RequestRules.Route, RequestRules.Refusal> {
        do throws(RequestRules.Refusal) {
            return .success(try RequestRules.route(method: method, path: path, managementPort: management))
        } catch { return .failure(error) }
    }

    /// A 32-byte token, the shortest the simulator takes.
    let token = String(repeating: "abcdef12", count: 8)

    @Test func pathsAndMethods() {
        #expect(route("POST", "/3/device/" + token.uppercased()) == .success(.devicePush(token: token)))
        #expect(route("POST", "/4/broadcasts/apps/com.example.eew") == .success(.broadcast(bundle: "com.example.eew")))
        #expect(route("POST", "/1/apps/com.example.eew/channels", management: true) == .success(.channels(bundle: "com.example.eew")))
        #expect(route("DELETE", "/1/apps/com.example.eew/channels", management: true) == .success(.channels(bundle: "com.example.eew")))
        #expect(route("GET", "/1/apps/com.example.eew/all-channels", management: true) == .success(.allChannels(bundle: "com.example.eew")))

        #expect(route("GET", "/3/device/" + token) == .failure(.init(reason: .methodNotAllowed, detail: "GET")))
        #expect(route("PUT", "/1/apps/com.example.eew/channels", management: true).failure?.reason == .methodNotAllowed)
        #expect(route("POST", "/1/apps/com.example.eew/all-channels", management: true).failure?.reason == .methodNotAllowed)
        #expect(route("POST", "/3/device/").failure?.reason == .missingDeviceToken)
        #expect(route("POST", "/3/device").failure?.reason == .missingDeviceToken)
        #expect(route("GET", "/3/device").failure?.reason == .methodNotAllowed)
        #expect(route("POST", "/3/device/xyz1").failure?.reason == .badDeviceToken)
        #expect(route("POST", "/3/device/abc").failure?.reason == .badDeviceToken)
        #expect(route("POST", "/3/device/abcdef12").failure?.reason == .badDeviceToken)
        #expect(route("POST", "/3/device/" + token.dropLast(2)).failure?.reason == .badDeviceToken)
        #expect(route("POST", "/2/device/" + token).failure?.reason == .badPath)
        // Each port serves only its own routes.
        #expect(route("POST", "/1/apps/com.example.eew/channels").failure?.reason == .badPath)
        #expect(route("POST", "/3/device/" + token, management: true).failure?.reason == .badPath)
    }

    @Test func duplicateHeaders() {
        #expect(refusal { () throws(RequestRules.Refusal) in
            try RequestRules.checkDuplicates([("apns-topic", "a"), ("apns-priority", "10"), ("apns-topic", "a")])
        } == .duplicateHeaders)
        #expect(refusal { () throws(RequestRules.Refusal) in
            try RequestRules.checkDuplicates([("authorization", "bearer a"), ("authorization", "bearer b")])
        } == .duplicateHeaders)
        #expect(refusal { () throws(RequestRules.Refusal) in
            try RequestRules.checkDuplicates([("accept", "*/*"), ("accept", "*/*"), ("apns-topic", "a")])
        } == nil)
    }

    func device(_ headers: [(name: String, value: String)], body: [UInt8] = updateBody(), bundles: Set<String> = []) -> Reason? {
        refusal { () throws(RequestRules.Refusal) in _ = try RequestRules.checkDevicePush(headers: headers, body: body, bundles: bundles) }
    }

    @Test func devicePushHeadersAndTopics() {
        #expect(device(liveActivityHeaders()) == nil)
        #expect(device(liveActivityHeaders(), bundles: [testBundle]) == nil)
        #expect(device(liveActivityHeaders(topic: "com.example.other"), bundles: [testBundle]) == .topicDisallowed)
        #expect(device([("apns-topic", testBundle + ".push-type.liveactivity")]) == .missingPushType)
        #expect(device([("apns-push-type", "liveactivity")]) == .missingTopic)
        // A Live Activity must go to the .push-type.liveactivity topic.
        #expect(device([("apns-push-type", "liveactivity"), ("apns-topic", testBundle)]) != nil)
        #expect(device(liveActivityHeaders(), body: []) == .payloadEmpty)
        #expect(device(liveActivityHeaders() + [("apns-priority", "7")]) != nil)
    }

    /// A start body with `input-push-token`, `input-push-channel`, both or neither.
    func startBody(token: Bool, channel: Bool) -> [UInt8] {
        let extra = (token ? #","input-push-token":1"# : "") + (channel ? #","input-push-channel":"\#(self.channel)""# : "")
        return Array(#"{"aps":{"timestamp":1787418000,"event":"start","attributes-type":"EewAttributes","attributes":{"id":"x"}\#(extra),"alert":{"title":"t","body":"b"},"content-state":{"intensity":5}}}"#.utf8)
    }

    @Test func aStartCarryingBothInputPushTokenAndInputPushChannelIsRefusedAsBadRequestParams() throws {
        // ActivityKit gives an activity one push type; the simulator takes the two keys as alternatives.
        #expect(device(liveActivityHeaders(), body: startBody(token: true, channel: true)) == .badRequestParams)
        let detail: String? = {
            do throws(RequestRules.Refusal) {
                _ = try RequestRules.checkDevicePush(headers: liveActivityHeaders(), body: startBody(token: true, channel: true), bundles: [])
                return nil
            } catch { return error.detail }
        }()
        #expect(detail?.contains("input-push-token") == true && detail?.contains("input-push-channel") == true, "\(detail ?? "-")")
        // Either one alone, or neither, is a valid start.
        #expect(device(liveActivityHeaders(), body: startBody(token: true, channel: false)) == nil)
        #expect(device(liveActivityHeaders(), body: startBody(token: false, channel: true)) == nil)
        #expect(device(liveActivityHeaders(), body: startBody(token: false, channel: false)) == nil)
    }

    func broadcast(_ headers: [(name: String, value: String)], body: [UInt8] = updateBody()) -> Reason? {
        refusal { () throws(RequestRules.Refusal) in
            _ = try RequestRules.checkBroadcast(headers: headers, body: body, bundle: testBundle, bundles: [testBundle])
        }
    }

    let channel = "AAAAAAAAAAAAAAAAAAAAAAAA"

    @Test func broadcastsNeedAnExpirationAndAChannel() {
        let good: [(name: String, value: String)] = [("apns-push-type", "liveactivity"), ("apns-channel-id", channel), ("apns-expiration", "0"),
                                                     ("apns-priority", "10")]
        #expect(broadcast(good) == nil)
        #expect(broadcast(good.filter { $0.name != "apns-expiration" }) == .badExpirationDate)
        #expect(broadcast(good.filter { $0.name != "apns-channel-id" }) == .missingChannelId)
        #expect(broadcast(good.filter { $0.name != "apns-push-type" }) == .missingPushType)
        #expect(broadcast(good.filter { $0.name != "apns-priority" }) == .badPriority)
        #expect(broadcast(good.map { $0.name == "apns-push-type" ? ($0.name, "alert") : $0 }) == .invalidPushType)
        #expect(broadcast(good.map { $0.name == "apns-channel-id" ? ($0.name, "not a channel!") : $0 }) == .badChannelId)
        #expect(broadcast(good + [("apns-topic", "com.example.other")]) == .topicDisallowed)
        #expect(broadcast(good, body: []) == .payloadEmpty)
    }

    @Test func channelCreateBodies() {
        func create(_ text: String) -> Result<Int, RequestRules.Refusal> {
            do throws(RequestRules.Refusal) { return .success(try RequestRules.checkChannelCreate(body: Array(text.utf8))) } catch {
                return .failure(error)
            }
        }
        #expect(create(#"{"message-storage-policy":1,"push-type":"LiveActivity"}"#) == .success(1))
        #expect(create(#"{"push-type":"LiveActivity","message-storage-policy":0}"#) == .success(0))
        #expect(create(#"{"message-storage-policy":2,"push-type":"LiveActivity"}"#).failure?.reason == .badRequestParams)
        #expect(create(#"{"push-type":"LiveActivity"}"#).failure?.reason == .badRequestParams)
        #expect(create(#"{"message-storage-policy":0}"#).failure?.reason == .missingPushType)
        #expect(create(#"{"message-storage-policy":0,"push-type":"alert"}"#).failure?.reason == .invalidPushType)
        #expect(create(#"{"message-storage-policy":0,"push-type":"liveactivity"}"#).failure?.reason == .invalidPushType)
        #expect(create(#"{"message-storage-policy":0,"push-type":"LiveActivity","extra":1}"#).failure?.reason == .badRequestParams)
        #expect(create("not json").failure?.reason == .badRequestPayload)
        #expect(create("").failure?.reason == .payloadEmpty)
    }
}

extension Result {
    var failure: Failure? { if case let .failure(error) = self { return error } else { return nil } }
}
