import Testing
import Vocabulary
@testable import APNs

/// A generator that returns a fixed sequence, so a "random" apns-id is known in advance.
struct FixedGenerator: RandomNumberGenerator {
    var words: [UInt64]
    mutating func next() -> UInt64 { words.removeFirst() }
}

/// The small header values: apns-id, collapse ID, device token, expiration, channel ID, environment.
@Suite struct ValueTests {
    @Test func apnsIDFromAnInjectedGeneratorIsAKnownVersion4UUID() throws {
        var generator = FixedGenerator(words: [0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210])
        let id = APNsID.random(using: &generator)
        #expect(id.text == "efcdab89-6745-4301-9032-547698badcfe")
        #expect(try APNsID(id.text) == id)
    }

    @Test func systemRandomAPNsIDsAreCanonicalAndDistinct() throws {
        let first = APNsID.random()
        let second = APNsID.random()
        #expect(first != second)
        #expect(try APNsID(first.text) == first)
    }

    @Test(arguments: [
        "123E4567-E89B-12D3-A456-426614174000",  // upper case
        "123e4567e89b12d3a456426614174000",  // no dashes
        "123e4567-e89b-12d3-a456-42661417400",  // short
        "123e4567-e89b-12d3-a456_426614174000",
        "g23e4567-e89b-12d3-a456-426614174000",
        "",
    ])
    func nonCanonicalAPNsIDIsRefused(text: String) {
        #expect {
            try APNsID(text)
        } throws: { error in
            let error = error as! ValidationError
            return error.field == "apns-id" && error.reason == .badMessageId && error.message.contains("lower-case UUID")
        }
    }

    @Test func collapseIDLimitIsSixtyFourBytesNotCharacters() throws {
        #expect(try CollapseID(String(repeating: "a", count: 64)).text.utf8.count == 64)
        #expect {
            try CollapseID(String(repeating: "a", count: 65))
        } throws: { error in
            let error = error as! ValidationError
            return error.message.contains("65 bytes") && error.message.contains("64") && error.reason == .badCollapseId
        }
        // 22 three-byte characters are 66 bytes.
        #expect(throws: ValidationError.self) { try CollapseID(String(repeating: "震", count: 22)) }
        _ = try CollapseID(String(repeating: "震", count: 21))
        #expect(throws: ValidationError.self) { try CollapseID("") }
        #expect(throws: ValidationError.self) { try CollapseID("a\nb") }
    }

    @Test(arguments: [
        "a1b2c3d4",  // short tokens are fine: Apple says not to assume a length
        String(repeating: "ab", count: 32),
        String(repeating: "0F", count: 100),
    ])
    func deviceTokenOfAnyEvenHexLengthIsAccepted(text: String) throws {
        let token = try DeviceToken(hex: text)
        #expect(token.hex == text.lowercased())
        #expect(token.path == "/3/device/" + text.lowercased())
        #expect(Notification.path(for: token) == token.path)
    }

    @Test(arguments: ["", "abc", "zz", "ab cd", String(repeating: "ab", count: 257)])
    func badDeviceTokenIsRefused(text: String) {
        #expect {
            try DeviceToken(hex: text)
        } throws: { error in
            let error = error as! ValidationError
            return error.field == "device token" && error.reason == .badDeviceToken
        }
    }

    @Test func aMistypedDeviceTokenIsNotQuotedWholeInTheError() {
        let typo = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeefg"
        #expect {
            try DeviceToken(hex: typo)
        } throws: { error in
            let error = error as! ValidationError
            return !error.description.contains("0011223344") && error.message.contains("'g' at byte 64")
        }
    }

    @Test func deviceTokenInALogLineShowsOnlyItsLastEightCharacters() throws {
        let token = try DeviceToken(hex: "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff")
        #expect(token.redacted == "…ccddeeff")
        #expect("\(token)" == "…ccddeeff")
        #expect(!"\(token)".contains("0011223344"))
    }

    @Test func expirationIsSecondsAndZeroMeansOneAttempt() throws {
        #expect(Expiration.immediately.headerValue == "0")
        #expect(Expiration.immediately.isImmediate)
        #expect(try Expiration(epochSeconds: 1_787_418_000).headerValue == "1787418000")
        #expect(try Expiration(headerValue: "1787418000").epochSeconds == 1_787_418_000)
        #expect {
            try Expiration(epochSeconds: 1_787_418_000_000)
        } throws: { error in
            let error = error as! ValidationError
            return error.message.contains("milliseconds") && error.reason == .badExpirationDate
        }
        #expect(throws: ValidationError.self) { try Expiration(epochSeconds: -1) }
        #expect(throws: ValidationError.self) { try Expiration(headerValue: "soon") }
    }

    @Test func channelIDIsBase64OfAnySize() throws {
        #expect(try ChannelID("dHN0LWNoYW5uZWwtcmVnaW9uLTMwMQ==").text == "dHN0LWNoYW5uZWwtcmVnaW9uLTMwMQ==")
        _ = try ChannelID(String(repeating: "A", count: 200))
        #expect(throws: ValidationError.self) { try ChannelID("") }
        #expect(throws: ValidationError.self) { try ChannelID("abc def") }
    }

    @Test(arguments: [
        (Environment.sandbox, "api.sandbox.push.apple.com", "api-manage-broadcast.sandbox.push.apple.com", 2195),
        (.production, "api.push.apple.com", "api-manage-broadcast.push.apple.com", 2196),
    ])
    func environmentHostsAndPorts(environment: Environment, pushHost: String, manageHost: String, managePort: Int) {
        #expect(environment.devicePush == Endpoint(host: pushHost, port: 443))
        #expect(environment.devicePushAlternate == Endpoint(host: pushHost, port: 2197))
        #expect(environment.broadcast == Endpoint(host: pushHost, port: 443))
        #expect(environment.channelManagement == Endpoint(host: manageHost, port: managePort))
        #expect(environment.channelManagement.description == "\(manageHost):\(managePort)")
    }

    @Test func environmentNamesFromConfiguration() throws {
        #expect(try Environment(name: "development") == .sandbox)
        #expect(try Environment(name: "Sandbox") == .sandbox)
        #expect(try Environment(name: "production") == .production)
        #expect {
            try Environment(name: "prod")
        } throws: { error in
            (error as! ValidationError).message.contains("use sandbox or production")
        }
    }
}
