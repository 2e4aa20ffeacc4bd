import Testing
@testable import APNs

/// Device push, broadcast and channel-management requests as they go on the wire (APNS.md §2, §9).
@Suite struct RequestTests {
    static let bundle = try! BundleID("com.example.quake")
    static let channel = try! ChannelID("dHN0LWNoYW5uZWwtcmVnaW9uLTMwMQ==")
    static let requestID = try! APNsID("0b7f6c1e-5d0e-4f8e-9a41-2f3f8f1a7c10")

    @Test func liveActivityNotificationHasEveryHeaderInOrder() throws {
        let notification = try Notification(pushType: .liveactivity, bundle: Self.bundle, priority: .immediate,
                                            expiration: Expiration(epochSeconds: 1_787_418_300), collapseID: CollapseID("eew-20260823020012"),
                                            apnsID: Self.requestID, payload: ExamplePayloads.eewStart)
        #expect(Notification.method == .post)
        #expect(notification.headers == [
            HeaderField("apns-push-type", "liveactivity"),
            HeaderField("apns-topic", "com.example.quake.push-type.liveactivity"),
            HeaderField("apns-priority", "10"),
            HeaderField("apns-expiration", "1787418300"),
            HeaderField("apns-collapse-id", "eew-20260823020012"),
            HeaderField("apns-id", "0b7f6c1e-5d0e-4f8e-9a41-2f3f8f1a7c10"),
        ])
        #expect(!notification.headers.contains { $0.name == "authorization" }, "the transport adds it")
        #expect(notification.payload == ExamplePayloads.eewStart)
    }

    @Test func optionalHeadersAreLeftOutAndAPNsIDIsSetPerPush() throws {
        let group = try Notification(pushType: .liveactivity, topic: "com.example.quake.push-type.liveactivity", payload: ExamplePayloads.eewUpdate)
        #expect(group.headers.map(\.name) == ["apns-push-type", "apns-topic"])
        let one = group.with(apnsID: Self.requestID)
        #expect(one.headers.last == HeaderField("apns-id", Self.requestID.text))
        #expect(one.apnsID == Self.requestID)
        let other = one.with(apnsID: try APNsID("11111111-2222-4333-8444-555555555555"))
        #expect(other.headers.filter { $0.name == "apns-id" }.map(\.value) == ["11111111-2222-4333-8444-555555555555"])
        #expect(one.with(apnsID: nil).headers == group.headers)
    }

    @Test func receivedHeadersAreCheckedWithTheSameRules() throws {
        let sent = try Notification(pushType: .liveactivity, bundle: Self.bundle, priority: .normal, apnsID: Self.requestID,
                                    payload: ExamplePayloads.eewUpdate)
        let received = try Notification(receivedHeaders: sent.headers, payload: sent.payload)
        #expect(received.headers == sent.headers)

        let cases: [([HeaderField], String, Reason)] = [
            ([HeaderField("apns-topic", "com.example.quake.push-type.liveactivity")], "apns-push-type", .missingPushType),
            ([HeaderField("apns-push-type", "liveactivity")], "apns-topic", .missingTopic),
            ([HeaderField("apns-push-type", "liveactivity"), HeaderField("apns-topic", "com.example.quake")], "apns-topic", .deviceTokenNotForTopic),
            ([HeaderField("apns-push-type", "liveactivity"), HeaderField("apns-topic", "com.example.quake.push-type.liveactivity"),
              HeaderField("apns-priority", "1")], "apns-priority", .badPriority),
            ([HeaderField("apns-push-type", "alert"), HeaderField("apns-topic", "com.example.quake"),
              HeaderField("apns-id", "ABC")], "apns-id", .badMessageId),
            ([HeaderField("apns-push-type", "alert"), HeaderField("apns-topic", "com.example.quake"),
              HeaderField("apns-collapse-id", String(repeating: "c", count: 65))], "apns-collapse-id", .badCollapseId),
            ([HeaderField("apns-push-type", "alert"), HeaderField("apns-topic", "com.example.quake"),
              HeaderField("apns-expiration", "tomorrow")], "apns-expiration", .badExpirationDate),
            ([HeaderField("apns-push-type", "alert"), HeaderField("apns-topic", "com.example.quake"),
              HeaderField("apns-push-type", "alert")], "apns-push-type", .duplicateHeaders),
        ]
        for (headers, field, reason) in cases {
            #expect {
                try Notification(receivedHeaders: headers, payload: ExamplePayloads.eewUpdate)
            } throws: { error in
                let error = error as! ValidationError
                return error.field == field && error.reason == reason
            }
        }
    }

    @Test func broadcastHasChannelHeaderExpirationAndNoTopic() throws {
        let request = try BroadcastRequest(bundle: Self.bundle, channelID: Self.channel, storagePolicy: .noMessageStored,
                                           priority: .normal, requestID: Self.requestID, payload: ExamplePayloads.eewUpdate)
        #expect(BroadcastRequest.method == .post)
        #expect(request.path == "/4/broadcasts/apps/com.example.quake")
        #expect(request.headers == [
            HeaderField("apns-channel-id", "dHN0LWNoYW5uZWwtcmVnaW9uLTMwMQ=="),
            HeaderField("apns-push-type", "liveactivity"),
            HeaderField("apns-priority", "5"),
            HeaderField("apns-expiration", "0"),
            HeaderField("apns-request-id", Self.requestID.text),
        ])
        #expect(!request.headers.contains { $0.name == "apns-topic" })
    }

    @Test func noMessageStoredChannelTakesOnlyExpirationZero() throws {
        let zero = try BroadcastRequest(bundle: Self.bundle, channelID: Self.channel, storagePolicy: .noMessageStored, priority: .immediate,
                                        expiration: .immediately, payload: ExamplePayloads.electionUpdate)
        #expect(zero.expiration == .immediately)
        #expect {
            try BroadcastRequest(bundle: Self.bundle, channelID: Self.channel, storagePolicy: .noMessageStored, priority: .immediate,
                                 expiration: Expiration(epochSeconds: 1_787_418_300), payload: ExamplePayloads.electionUpdate)
        } throws: { error in
            let error = error as! ValidationError
            return error.field == "apns-expiration" && error.reason == .badExpirationDate && error.message.contains("only accepts 0")
        }
    }

    @Test func storedChannelNeedsAnExplicitExpiration() throws {
        #expect(throws: ValidationError.self) {
            try BroadcastRequest(bundle: Self.bundle, channelID: Self.channel, storagePolicy: .mostRecentMessageStored, priority: .normal,
                                 payload: ExamplePayloads.trainUpdate)
        }
        let stored = try BroadcastRequest(bundle: Self.bundle, channelID: Self.channel, storagePolicy: .mostRecentMessageStored, priority: .low,
                                          expiration: Expiration(epochSeconds: 1_784_460_600), payload: ExamplePayloads.trainUpdate)
        #expect(stored.headers.contains(HeaderField("apns-expiration", "1784460600")))
        #expect(stored.headers.contains(HeaderField("apns-priority", "1")))
    }

    @Test func broadcastPathTakesTheBareBundleID() throws {
        #expect {
            try BroadcastRequest(bundle: BundleID("com.example.quake.push-type.liveactivity"), channelID: Self.channel,
                                 storagePolicy: .noMessageStored, priority: .normal, payload: ExamplePayloads.eewUpdate)
        } throws: { error in
            (error as! ValidationError).reason == .topicDisallowed
        }
        let voipApp = try BroadcastRequest(bundle: BundleID("com.example.voip"), channelID: Self.channel,
                                           storagePolicy: .noMessageStored, priority: .normal, payload: ExamplePayloads.eewUpdate)
        #expect(voipApp.path == "/4/broadcasts/apps/com.example.voip")
    }

    @Test(arguments: [
        (ChannelManagementRequest.Operation.create(.noMessageStored), HTTPMethod.post, "/1/apps/com.example.quake/channels", [HeaderField](),
         #"{"message-storage-policy":0,"push-type":"LiveActivity"}"#),
        (.create(.mostRecentMessageStored), .post, "/1/apps/com.example.quake/channels", [],
         #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#),
        (.read(channel), .get, "/1/apps/com.example.quake/channels", [HeaderField("apns-channel-id", channel.text)], ""),
        (.delete(channel), .delete, "/1/apps/com.example.quake/channels", [HeaderField("apns-channel-id", channel.text)], ""),
        (.listAll, .get, "/1/apps/com.example.quake/all-channels", [], ""),
    ])
    func channelManagementRequest(operation: ChannelManagementRequest.Operation, method: HTTPMethod, path: String,
                                  headers: [HeaderField], body: String) {
        let request = ChannelManagementRequest(operation, bundle: Self.bundle)
        #expect(request.method == method)
        #expect(request.path == path)
        #expect(request.headers == headers)
        #expect(request.body == Array(body.utf8))
        let withID = ChannelManagementRequest(operation, bundle: Self.bundle, requestID: Self.requestID)
        #expect(withID.headers == headers + [HeaderField("apns-request-id", Self.requestID.text)])
    }

    @Test func channelManagementAnswersAreRead() throws {
        let created = Response(status: 201, headers: [HeaderField("apns-channel-id", "c2FtcGxlLWNoYW5uZWwtaWQ="), HeaderField("apns-request-id", Self.requestID.text)], body: [])
        #expect(created.action == .delivered)
        #expect(created.requestID == Self.requestID.text)
        #expect(try ChannelManagementResponse.createdChannelID(headers: [HeaderField("apns-channel-id", "c2FtcGxlLWNoYW5uZWwtaWQ=")]).text == "c2FtcGxlLWNoYW5uZWwtaWQ=")
        #expect {
            try ChannelManagementResponse.createdChannelID(headers: [])
        } throws: { error in
            (error as! ValidationError).field == "apns-channel-id"
        }

        let info = try ChannelManagementResponse.channelInfo(body: Array(#"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#.utf8))
        #expect(info.storagePolicy == .mostRecentMessageStored)
        #expect(info.pushType == "LiveActivity")
        #expect(throws: ValidationError.self) { try ChannelManagementResponse.channelInfo(body: Array(#"{"message-storage-policy":2}"#.utf8)) }

        let list = try ChannelManagementResponse.channelList(body: Array(#"{"channels":["YQ==","dHN0LWNoYW5uZWwtcmVnaW9uLTMwMQ=="]}"#.utf8))
        #expect(list.map(\.text) == ["YQ==", "dHN0LWNoYW5uZWwtcmVnaW9uLTMwMQ=="])
        #expect(try ChannelManagementResponse.channelList(body: Array(#"{"channels":[]}"#.utf8)).isEmpty)
        #expect(throws: ValidationError.self) { try ChannelManagementResponse.channelList(body: Array(#"{"channels":[1]}"#.utf8)) }
        #expect(throws: ValidationError.self) { try ChannelManagementResponse.channelList(body: []) }
    }

    @Test func deleteOfAnAlreadyDeletedChannelCountsAsDone() {
        #expect(ChannelManagementResponse.deleteSucceeded(Response(status: 204, headers: [], body: [])))
        #expect(ChannelManagementResponse.deleteSucceeded(Response(status: 404, headers: [], body: Array(#"{"reason":"BadPath"}"#.utf8))))
        #expect(!ChannelManagementResponse.deleteSucceeded(Response(status: 403, headers: [], body: Array(#"{"reason":"InvalidProviderToken"}"#.utf8))))
    }
}
