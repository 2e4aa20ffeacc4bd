import Testing
@testable import APNs

/// Responses and what to do about them (APNS.md §4, §9.3, §10).
@Suite struct ResponseTests {
    /// Every documented reason with its status and action, written out from APNS.md rather than
    /// taken from the code, so a wrong entry in `Reason` shows up here.
    static let documented: [(Int, String, ResponseAction)] = [
        (400, "BadCollapseId", .fixRequest),
        (400, "BadDeviceToken", .removeToken),
        (400, "BadExpirationDate", .fixRequest),
        (400, "BadMessageId", .fixRequest),
        (400, "BadPriority", .fixRequest),
        (400, "BadTopic", .fixRequest),
        (400, "DeviceTokenNotForTopic", .removeToken),
        (400, "DuplicateHeaders", .fixRequest),
        (400, "IdleTimeout", .newConnection),
        (400, "InvalidPushType", .fixRequest),
        (400, "MissingDeviceToken", .fixRequest),
        (400, "MissingTopic", .fixRequest),
        (400, "PayloadEmpty", .fixRequest),
        (400, "TopicDisallowed", .fixCredentials),
        (400, "FeatureNotEnabled", .fixCredentials),
        (400, "BroadcastFeatureNotEnabled", .fixCredentials),
        (400, "MissingChannelId", .fixRequest),
        (400, "BadChannelId", .removeChannel),
        (400, "ChannelNotRegistered", .removeChannel),
        (400, "BadRequestParams", .fixRequest),
        (400, "BadRequestPayload", .fixRequest),
        (400, "MissingPushType", .fixRequest),
        (400, "CannotCreateChannelConfig", .fixRequest),
        (403, "BadCertificate", .fixCredentials),
        (403, "BadCertificateEnvironment", .fixCredentials),
        (403, "ExpiredProviderToken", .newConnection),
        (403, "Forbidden", .fixCredentials),
        (403, "InvalidProviderToken", .fixCredentials),
        (403, "MissingProviderToken", .fixCredentials),
        (403, "UnrelatedKeyIdInToken", .newConnection),
        (403, "BadEnvironmentKeyIdInToken", .fixCredentials),
        (403, "BadEnvironmentKeyInToken", .fixCredentials),
        (403, "TopicMismatch", .fixCredentials),
        (404, "BadPath", .fixRequest),
        (405, "MethodNotAllowed", .fixRequest),
        (410, "ExpiredToken", .removeToken),
        (410, "Unregistered", .removeToken),
        (413, "PayloadTooLarge", .fixRequest),
        (429, "TooManyProviderTokenUpdates", .newConnection),
        (429, "TooManyRequests", .retry),
        (500, "InternalServerError", .retry),
        (503, "ServiceUnavailable", .retry),
        (503, "Service Unavailable", .retry),
        (503, "Shutdown", .retryOnNewConnection),
    ]

    static func body(_ json: String) -> [UInt8] { Array(json.utf8) }

    @Test(arguments: documented)
    func reasonDecidesTheAction(status: Int, reason: String, action: ResponseAction) {
        let response = Response(status: status, headers: [], body: Self.body(#"{"reason":"\#(reason)"}"#))
        #expect(response.status == status)
        #expect(response.reason.map { if case .unknown = $0 { false } else { true } } == true, "\(reason) must be known")
        #expect(response.action == action)
        #expect(Reason(reason).action == action)
    }

    @Test func everyKnownReasonIsInTheDocumentedTable() {
        let documented = Set(Self.documented.map { Reason($0.1) })
        for reason in Reason.known {
            #expect(documented.contains(reason), "\(reason) has no documented row")
            #expect(Reason(reason.name) == reason)
        }
    }

    @Test(arguments: ["Service Unavailable", "service unavailable", "SERVICEUNAVAILABLE", "service_unavailable", " ServiceUnavailable "])
    func reasonsMatchWhateverTheCaseAndSpacing(text: String) {
        #expect(Reason(text) == .serviceUnavailable)
        #expect(Reason(text).name == "ServiceUnavailable")
    }

    @Test(arguments: [
        (500, ResponseAction.retry), (502, .retry), (503, .retry), (429, .retry),
        (400, .fixRequest), (404, .fixRequest), (405, .fixRequest), (413, .fixRequest),
        (403, .fixCredentials), (410, .removeToken),
    ])
    func unknownOrMissingReasonFallsBackOnTheStatusClass(status: Int, action: ResponseAction) {
        let unknown = Response(status: status, headers: [], body: Self.body(#"{"reason":"SomethingNew"}"#))
        #expect(unknown.reason == .unknown("SomethingNew"))
        #expect(unknown.reason?.name == "SomethingNew")
        #expect(unknown.action == action)
        #expect(Response(status: status, headers: [], body: []).action == action)
        #expect(Response(status: status, headers: [], body: Self.body("<html>bad gateway</html>")).action == action)
    }

    @Test func successCarriesTheIDsAndIsDeliveredWhateverTheBody() {
        let response = Response(status: 200, headers: [
            HeaderField("apns-id", "0b7f6c1e-5d0e-4f8e-9a41-2f3f8f1a7c10"),
            HeaderField("Apns-Unique-Id", "a3b4c5d6-0000-4000-8000-000000000001"),
        ], body: Self.body(#"{"reason":"BadDeviceToken"}"#))
        #expect(response.action == .delivered)
        #expect(response.reason == nil)
        #expect(response.apnsID == "0b7f6c1e-5d0e-4f8e-9a41-2f3f8f1a7c10")
        #expect(response.uniqueID == "a3b4c5d6-0000-4000-8000-000000000001")
        #expect(Response(status: 201, headers: [], body: []).action == .delivered)
    }

    @Test func unregisteredTimestampIsMillisecondsAndPrunesOnlyOlderRegistrations() {
        let response = Response(status: 410, headers: [], body: Self.body(#"{"reason":"Unregistered","timestamp":1787418000123}"#))
        #expect(response.reason == .unregistered)
        #expect(response.timestamp == 1_787_418_000_123)
        #expect(response.shouldRemoveToken(registeredAt: 1_787_418_000_122))
        #expect(!response.shouldRemoveToken(registeredAt: 1_787_418_000_123))
        #expect(!response.shouldRemoveToken(registeredAt: 1_787_418_060_000), "the device registered again after APNs dropped the token")
        let exponent = Response(status: 410, headers: [], body: Self.body(#"{"reason":"Unregistered","timestamp":1.787418e12}"#))
        #expect(exponent.timestamp == 1_787_418_000_000)
    }

    @Test func responseFromPickedHeaderValuesAndABorrowedBody() {
        let bytes = Self.body(#"{"reason":"TooManyRequests"}"#)
        let response = bytes.withUnsafeBufferPointer { Response(status: 429, apnsID: "0b7f6c1e-5d0e-4f8e-9a41-2f3f8f1a7c10", body: $0) }
        #expect(response == Response(status: 429, headers: [HeaderField("apns-id", "0b7f6c1e-5d0e-4f8e-9a41-2f3f8f1a7c10")], body: bytes))
        #expect(response.action == .retry)
    }

    @Test func otherRemovalsPruneWithoutATimestampAndNothingElsePrunes() {
        #expect(Response(status: 400, headers: [], body: Self.body(#"{"reason":"BadDeviceToken"}"#)).shouldRemoveToken(registeredAt: .max))
        #expect(!Response(status: 200, headers: [], body: []).shouldRemoveToken(registeredAt: 0))
        #expect(!Response(status: 429, headers: [], body: Self.body(#"{"reason":"TooManyRequests"}"#)).shouldRemoveToken(registeredAt: 0))
        #expect(!Response(status: 400, headers: [], body: Self.body(#"{"reason":"ChannelNotRegistered"}"#)).shouldRemoveToken(registeredAt: 0))
    }

    @Test func goAwayDebugDataMayCarryTheErrorJSON() {
        #expect(ErrorBody.goAwayReason(debugData: Self.body(#"{"reason":"Shutdown"}"#)) == .shutdown)
        #expect(ErrorBody.goAwayReason(debugData: Self.body(#"{"reason":"ExpiredProviderToken"}"#))?.action == .newConnection)
        #expect(ErrorBody.goAwayReason(debugData: Self.body("Maximum active streams violated for this endpoint.")) == nil)
        #expect(ErrorBody.goAwayReason(debugData: []) == nil)
        #expect(ErrorBody.goAwayReason(debugData: Self.body(#"{"reason":7}"#)) == nil)
        #expect(ErrorBody.goAwayReason(debugData: #"{"reason":"Service Unavailable"}"#) == .serviceUnavailable)
    }
}
