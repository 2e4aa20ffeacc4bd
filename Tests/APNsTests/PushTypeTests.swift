import Testing
@testable import APNs

/// Each push type's topic and headers (APNS.md §3), and the reverse reading a simulator does.
@Suite struct PushTypeTests {
    static let bundle = try! BundleID("com.example.quake")

    /// Every push type with the topic Apple documents for the bundle `com.example.quake`.
    static let topics: [(PushType, String)] = [
        (.alert, "com.example.quake"),
        (.background, "com.example.quake"),
        (.liveactivity, "com.example.quake.push-type.liveactivity"),
        (.voip, "com.example.quake.voip"),
        (.complication, "com.example.quake.complication"),
        (.fileprovider, "com.example.quake.pushkit.fileprovider"),
        (.location, "com.example.quake.location-query"),
        (.mdm, "com.example.quake"),
        (.pushtotalk, "com.example.quake.voip-ptt"),
        (.widgets, "com.example.quake.push-type.widgets"),
        (.controls, "com.example.quake.push-type.controls"),
    ]

    @Test func everyPushTypeHasATopicRow() {
        #expect(Set(Self.topics.map(\.0)) == Set(PushType.allCases))
    }

    @Test(arguments: topics)
    func topicAndHeaders(pushType: PushType, topic: String) throws {
        #expect(pushType.topic(forBundle: Self.bundle) == topic)
        let priority: Priority = pushType == .background ? .normal : .immediate
        let notification = try Notification(pushType: pushType, bundle: Self.bundle, priority: priority, payload: Array(#"{"aps":{}}"#.utf8))
        #expect(notification.headers == [
            HeaderField("apns-push-type", pushType.rawValue),
            HeaderField("apns-topic", topic),
            HeaderField("apns-priority", priority == .normal ? "5" : "10"),
        ])
        #expect(try PushType(headerValue: pushType.rawValue) == pushType)
    }

    @Test(arguments: topics)
    func topicSuffixImpliesThePushType(pushType: PushType, topic: String) {
        let (bundle, implied) = PushType.split(topic: topic)
        #expect(bundle == "com.example.quake")
        switch pushType {
        case .alert, .background, .mdm: #expect(implied == nil)
        default: #expect(implied == pushType)
        }
    }

    /// A bundle ID may itself end in a word that is also a push-type suffix (a VoIP app called
    /// com.example.voip): a topic built from it fits by construction and must not be read back as
    /// carrying that suffix.
    @Test(arguments: [(PushType.alert, "com.example.voip", "com.example.voip"), (.background, "com.example.voip", "com.example.voip"),
                      (.voip, "com.example.voip", "com.example.voip.voip"), (.alert, "com.example.complication", "com.example.complication")])
    func bundleEndingInASuffixWordGetsItsBuiltTopic(pushType: PushType, bundle: String, topic: String) throws {
        let priority: Priority = pushType == .background ? .normal : .immediate
        let notification = try Notification(pushType: pushType, bundle: try BundleID(bundle), priority: priority,
                                            payload: Array(#"{"aps":{}}"#.utf8))
        #expect(notification.topic == topic)
    }

    @Test func mdmTopicIsUsedAsGiven() throws {
        let mdmTopic = try BundleID("com.apple.mgmt.External.3f7a2c1e-8b4d-4e5f-9a0b-1c2d3e4f5a6b")
        #expect(PushType.mdm.topic(forBundle: mdmTopic) == mdmTopic.text)
        try PushType.mdm.check(topic: "com.apple.mgmt.External.3f7a2c1e.voip")
    }

    /// The classic mistake: a Live Activity sent to the bare bundle ID gets `DeviceTokenNotForTopic`.
    @Test func liveActivityToTheBareBundleIsRefusedWithTheRightTopic() {
        #expect {
            try PushType.liveactivity.check(topic: "com.example.quake")
        } throws: { error in
            let error = error as! ValidationError
            return error.field == "apns-topic" && error.message.contains("'com.example.quake.push-type.liveactivity'")
                && error.reason == .deviceTokenNotForTopic
        }
    }

    @Test(arguments: [
        (PushType.alert, "com.example.quake.push-type.liveactivity", "com.example.quake"),
        (.voip, "com.example.quake.voip-ptt", "com.example.quake.voip"),
        (.widgets, "com.example.quake.push-type.controls", "com.example.quake.push-type.widgets"),
        (.background, "com.example.quake.voip", "com.example.quake"),
    ])
    func topicOfAnotherTypeIsRefusedNamingTheFix(pushType: PushType, topic: String, fix: String) {
        #expect {
            try pushType.check(topic: topic)
        } throws: { error in
            (error as! ValidationError).message.contains("use '\(fix)'")
        }
    }

    @Test(arguments: ["", "com.example quake", "com.example\r\nx: y"])
    func emptyOrUnsafeTopicIsRefused(topic: String) {
        #expect(throws: ValidationError.self) { try PushType.alert.check(topic: topic) }
    }

    @Test func unknownPushTypeHeaderNamesTheChoices() throws {
        #expect {
            try PushType(headerValue: "liveActivity2")
        } throws: { error in
            let error = error as! ValidationError
            return error.field == "apns-push-type" && error.message.contains("liveactivity") && error.reason == .invalidPushType
        }
        #expect(try PushType(headerValue: "Liveactivity") == .liveactivity, "Apple's broadcast docs spell it so")
    }

    @Test(arguments: ["", "com/example", "com.example.quake ", "コム.example"])
    func bundleIDOutsideApplesAlphabetIsRefused(text: String) {
        #expect(throws: ValidationError.self) { try BundleID(text) }
    }
}
