import APNs
import JSONCore
import Testing
@testable import TokenStore

/// Android installations in the import format: `"kind":"fcm"` with the FCM token's own text as
/// `"token"`, refused when the text is no FCM token, written back byte for byte.
@Suite struct AndroidTokenLineTests {
    let fcm = String(decoding: fcmToken(7), as: UTF8.self)
    var line: String {
        #"{"installationId":"phone-7","app":"com.example.eew","environment":"production","kind":"fcm","token":"\#(fcm)","registeredAt":1717000000000,"topics":[{"name":"region:301","minLevel":3}]}"#
    }

    /// The refusal (`message` is its description, column included: see TokenLineTests).
    func failure(_ text: String) -> TokenLineParser.Failure? {
        do { _ = try TokenLineParser.parse(text, now: 1_760_000_000_000); return nil } catch { return error }
    }

    @Test func anFCMLineIsAnAndroidRegistrationWithTheTokensTextAsItsBytes() throws {
        let registration = try TokenLineParser.parse(line, now: 1_760_000_000_000)
        #expect(registration.kind == .fcm && Platform(kind: registration.kind) == .android)
        #expect(registration.token == Array(fcm.utf8))
        #expect(registration.topics == [TopicSubscription(name: "region:301", minLevel: 3)])
        #expect(registration.registeredAt == 1_717_000_000_000 && registration.broadcast == nil)
        // The kind may come after the token: the token is read once the line is.
        let reordered = #"{"token":"\#(fcm)","topics":[{"minLevel":3,"name":"region:301"}],"registeredAt":1717000000000,"kind":"fcm","environment":"production","app":"com.example.eew","installationId":"phone-7"}"#
        #expect(try TokenLineParser.parse(reordered, now: 1_760_000_000_000) == registration)
        // Every allowed character, and the shortest and longest tokens.
        for text in ["aZ09_:-", "x", String(repeating: "k", count: 255)] {
            #expect(try TokenLineParser.parse(line.replacing(fcm, with: text), now: 1_760_000_000_000).token == Array(text.utf8))
        }
    }

    @Test func aBadFCMTokenIsRefusedNamingTheFieldAndTheAllowedCharactersNeverEchoingIt() throws {
        let tokenColumn = Array(line.utf8).firstRange(of: Array(#""token":"#.utf8))!.upperBound + 1
        for bad in ["", String(repeating: "k", count: 256), "abc.def", "abc def", "abc/def=", "tökén", #"ab\u0041"#] {
            let refusal = failure(line.replacing(fcm, with: bad))
            #expect(refusal?.message.hasPrefix("token is not an FCM registration token") == true, "\(bad): \(refusal?.message ?? "accepted")")
            #expect(refusal?.message.contains("1 to 255 characters of A-Z, a-z, 0-9, '_', ':' and '-'") == true)
            #expect(refusal?.column == tokenColumn, "\(bad)")
            if bad.count > 3 { #expect(refusal?.message.contains(bad) == false) }
        }
        // An APNs kind still wants hex: an FCM token under kind device is refused as not hex.
        #expect(failure(line.replacing(#""kind":"fcm""#, with: #""kind":"device""#))?.message.hasPrefix("token must be an even number of hex digits (0-9, a-f)") == true)
        // A hex token under kind fcm is text an FCM token may be: it is taken as written, not decoded.
        let hex = String(repeating: "ab", count: 32)
        #expect(try TokenLineParser.parse(line.replacing(fcm, with: hex), now: 1_760_000_000_000).token == Array(hex.utf8))
    }

    @Test func broadcastIsRefusedOnAnFCMLineAndAnUnknownKindNamesFCM() {
        for flag in ["true", "false"] {
            let flagged = line.replacing(#","topics""#, with: #","broadcast":\#(flag),"topics""#)
            #expect(failure(flagged)?.message.hasPrefix("broadcast is for iOS installations (iOS 18 or later); leave it out for an fcm token") == true)
        }
        #expect(failure(line.replacing(#""kind":"fcm""#, with: #""kind":"android""#))?.message
            .hasPrefix(#"kind must be "pushToStart" or "device" or "fcm", not "android""#) == true)
    }

    @Test func anAndroidInstallationIsWrittenWithItsTokenAsTextAndReadsBackToTheSameLine() throws {
        let installation = Installation(id: "phone-7", app: "com.example.eew", environment: .production, createdAt: 0, updatedAt: 0,
                                        fcmToken: fcmToken(7), fcmTopics: [TopicSubscription(name: "region:301", minLevel: 3)])
        var bytes: [UInt8] = []
        for kind in TokenKind.allCases { TokenLineWriter.append(installation, kind: kind, registeredAt: 1_717_000_000_000, to: &bytes) }
        #expect(String(decoding: bytes, as: UTF8.self) == line + "\n")
        #expect((try? JSONParser.parse(line)) != nil, "a JSON line")
    }

    @Test func exportImportExportOfAMixedStoreIsByteIdentical() throws {
        let source = StoreFixture(), target = StoreFixture()
        let original = try source.open(), copy = try target.open()
        let topics = [TopicSubscription(name: "region:301", minLevel: 3), TopicSubscription(name: "b")]
        try original.write([
            .register(registration("ios", token(1), topics: topics, broadcast: true), at: 1_000),
            .register(registration("ios", token(2), kind: .device, topics: [topics[1]]), at: 2_000),
            .register(registration("android-1", fcmToken(1), kind: .fcm, topics: topics), at: 3_000),
            .register(registration("android-2", fcmToken(2), kind: .fcm, topics: []), at: 4_000),
        ])
        func export(_ store: TokenStore) throws -> [UInt8] {
            var out: [UInt8] = []
            try store.forEachInstallationWithRegistrationTimes { installation, times throws(StoreError) in
                for kind in TokenKind.allCases { TokenLineWriter.append(installation, kind: kind, registeredAt: times[kind], to: &out) }
            }
            return out
        }
        let first = try export(original)
        let lines = String(decoding: first, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == 4 && lines.filter { $0.contains(#""kind":"fcm""#) }.count == 2)
        try copy.write(try lines.map { .register(try TokenLineParser.parse($0, now: 60_000), at: 60_000) })
        #expect(try export(copy) == first)
        #expect(try copy.targets("region:301", kind: .fcm).count == 1)
        #expect(try copy.tokenOwner(app: "com.example.eew", environment: .sandbox, kind: .fcm, token: fcmToken(2))?.registeredAt == 4_000)
        #expect(try copy.check().isConsistent)
    }
}
