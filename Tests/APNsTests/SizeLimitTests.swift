import Testing
@testable import APNs

/// Size limits at the boundary (APNS.md §7): refused before sending, with the size and the limit named.
@Suite struct SizeLimitTests {
    /// A valid `{"aps":{"alert":"xxx…"}}` of exactly `size` bytes.
    static func payload(ofSize size: Int) -> [UInt8] {
        let frame = #"{"aps":{"alert":""}}"#
        return Array((frame.dropLast(3) + String(repeating: "x", count: size - frame.utf8.count) + #""}}"#).utf8)
    }

    static func refusal(_ error: any Error, size: Int, limit: Int) -> Bool {
        guard let error = error as? ValidationError else { return false }
        return error.field == "payload" && error.reason == .payloadTooLarge
            && error.message.contains("is \(size) bytes") && error.message.contains("at most \(limit) bytes")
    }

    @Test(arguments: [
        (PayloadDestination.device(.liveactivity), 4096), (.device(.alert), 4096), (.device(.background), 4096),
        (.device(.voip), 5120), (.broadcast, 5120),
    ])
    func limitAtTheBoundary(destination: PayloadDestination, limit: Int) throws {
        #expect(destination.maximumBytes == limit)
        try destination.checkSize(limit)
        #expect { try destination.checkSize(limit + 1) } throws: { Self.refusal($0, size: limit + 1, limit: limit) }
        #expect(throws: ValidationError.self) { try destination.checkSize(0) }
    }

    @Test(arguments: [(PushType.liveactivity, 4096), (.alert, 4096), (.voip, 5120)])
    func notificationBodyAtTheBoundary(pushType: PushType, limit: Int) throws {
        let bundle = try BundleID("com.example.quake")
        let fits = Self.payload(ofSize: limit)
        #expect(fits.count == limit)
        _ = try Notification(pushType: pushType, bundle: bundle, payload: fits)
        #expect {
            try Notification(pushType: pushType, bundle: bundle, payload: Self.payload(ofSize: limit + 1))
        } throws: { Self.refusal($0, size: limit + 1, limit: limit) }
        #expect(throws: ValidationError.self) { try Notification(pushType: pushType, bundle: bundle, payload: []) }
    }

    @Test func broadcastBodyAtTheBoundary() throws {
        let bundle = try BundleID("com.example.quake")
        let channel = try ChannelID("YQ==")
        _ = try BroadcastRequest(bundle: bundle, channelID: channel, storagePolicy: .noMessageStored, priority: .normal, payload: Self.payload(ofSize: 5120))
        #expect {
            try BroadcastRequest(bundle: bundle, channelID: channel, storagePolicy: .noMessageStored, priority: .normal, payload: Self.payload(ofSize: 5121))
        } throws: { Self.refusal($0, size: 5121, limit: 5120) }
    }

    @Test func validatorChecksTheSizeFirst() throws {
        _ = try PayloadValidator.validate(Self.payload(ofSize: 4096), for: .device(.alert))
        #expect { try PayloadValidator.validate(Self.payload(ofSize: 4097), for: .device(.alert)) } throws: { Self.refusal($0, size: 4097, limit: 4096) }
    }

    /// An update whose rendered body is exactly `size` bytes, padded in the alert body (not Live
    /// Activity data, so the 4 KB ActivityKit limit does not interfere).
    static func update(renderingTo size: Int) throws -> LiveActivityPayload {
        var payload = LiveActivityPayload.update(timestamp: 1_787_418_004, contentState: Array(#"{"serialNo":2}"#.utf8))
        payload.alert = LiveActivityAlert(title: "t", body: "")
        let frame = try payload.render(for: .broadcast).count
        payload.alert = LiveActivityAlert(title: "t", body: String(repeating: "x", count: size - frame))
        return payload
    }

    @Test(arguments: [(PayloadDestination.device(.liveactivity), 4096), (.broadcast, 5120)])
    func renderedLiveActivityAtTheBoundary(destination: PayloadDestination, limit: Int) throws {
        #expect(try Self.update(renderingTo: limit).render(for: destination).count == limit)
        #expect {
            try Self.update(renderingTo: limit + 1).render(for: destination)
        } throws: { Self.refusal($0, size: limit + 1, limit: limit) }
    }

    @Test func liveActivityDataIsLimitedToFourKilobytesEvenOnBroadcast() throws {
        let frame = #"{"s":""}"#.utf8.count
        func state(_ size: Int) -> [UInt8] { Array(#"{"s":"\#(String(repeating: "x", count: size - frame))"}"#.utf8) }
        _ = try LiveActivityPayload.update(timestamp: 1, contentState: state(4000)).render(for: .broadcast)
        #expect {
            try LiveActivityPayload.update(timestamp: 1, contentState: state(4097)).render(for: .broadcast)
        } throws: { error in
            let error = error as! ValidationError
            return error.field == "aps.content-state" && error.message.contains("4097 bytes") && error.message.contains("4096")
        }
    }
}
