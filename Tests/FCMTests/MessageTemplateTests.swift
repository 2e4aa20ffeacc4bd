import FCM
import JSONCore
import Testing
import Vocabulary

/// A group's body is a constant prefix, the phone's token and the group's suffix, and every body a
/// template can build is one FCM takes.
@Suite struct MessageTemplateTests {
    static let token = "dXN1Y2g6QVBBOTFiRm9vYmFy-_:x"
    var token: DeviceToken { DeviceToken(bytes: Array(Self.token.utf8))! }

    func liveUpdate(contentState: String = #"{"forecastIntensity":"5-"}"#, title: String? = "緊急地震速報") throws(FCMValidationError) -> LiveUpdateData {
        try LiveUpdateData(eventKey: "eew-1", serial: 2, kind: .update, group: "region:301", contentState: Array(contentState.utf8),
                           alertTitle: title, alertBody: "強い揺れに警戒")
    }

    @Test func theBodyIsTheMessageFCMDocumentsWithTheTokenFirst() throws {
        let template = try FCMMessageTemplate(data: try liveUpdate().fields,
                                              android: FCMAndroidOptions(priority: .high, ttl: .seconds(60), collapseKey: "eew-1"))
        let body = String(decoding: template.body(token: token), as: UTF8.self)
        #expect(body == #"{"message":{"token":"dXN1Y2g6QVBBOTFiRm9vYmFy-_:x","data":{"eventKey":"eew-1","serial":"2","kind":"update","#
            + #""group":"region:301","contentState":"{\"forecastIntensity\":\"5-\"}","alertTitle":"緊急地震速報","alertBody":"強い揺れに警戒"},"#
            + #""android":{"priority":"HIGH","ttl":"60s","collapse_key":"eew-1"}}}"#)
        #expect(template.prefix == Array(#"{"message":{"token":""#.utf8))
        let parsed = try JSONParser.parse(template.body(token: token))
        #expect(parsed["message"]?["data"]?["contentState"]?.stringValue == #"{"forecastIntensity":"5-"}"#)
    }

    /// The TTL a message carries is what its sender has left of the deadline as it writes it
    /// (never more than the template's), the rest of the body byte for byte the template's; a
    /// TTL with a fraction is never rewritten.
    @Test(arguments: [(Int64(119), "119s"), (80, "80s"), (9, "9s"), (0, "0s"), (120, "120s"), (500, "120s"), (-3, "0s")])
    func theTTLIsWhatIsLeftOfTheDeadlineWhenTheMessageIsWritten(left: Int64, written: String) throws {
        let template = try FCMMessageTemplate(data: try liveUpdate().fields,
                                              android: FCMAndroidOptions(priority: .high, ttl: .seconds(120), collapseKey: "eew-1"))
        let whole = String(decoding: template.body(token: token), as: UTF8.self)
        let body = String(decoding: template.body(token: token, ttlSeconds: left), as: UTF8.self)
        #expect(body == whole.replacing(#""ttl":"120s""#, with: #""ttl":"\#(written)""#), "\(body)")
        #expect(try JSONParser.parse(Array(body.utf8))["message"]?["android"]?["ttl"]?.stringValue == written)
        #expect(template.bodyCount(tokenByteCount: token.count) >= body.utf8.count, "the size checked is the widest")

        let fraction = try FCMMessageTemplate(data: [], android: FCMAndroidOptions(priority: .high, ttl: .milliseconds(2_500)))
        #expect(fraction.body(token: token, ttlSeconds: left) == fraction.body(token: token))
        let none = try FCMMessageTemplate(data: [], android: FCMAndroidOptions(priority: .high))
        #expect(none.body(token: token, ttlSeconds: left) == none.body(token: token))
    }

    @Test func aNotificationIsWrittenOnlyWhenItSaysSomething() throws {
        let android = FCMAndroidOptions(priority: .normal)
        let alert = try FCMMessageTemplate(data: [], android: android, notification: FCMNotification(title: "T", body: "B"))
        #expect(String(decoding: alert.suffix, as: UTF8.self) == #"","android":{"priority":"NORMAL"},"notification":{"title":"T","body":"B"}}}"#)
        let empty = try FCMMessageTemplate(data: [], android: android, notification: FCMNotification())
        #expect(String(decoding: empty.suffix, as: UTF8.self) == #"","android":{"priority":"NORMAL"}}}"#)
    }

    @Test func writingIntoABufferGivesTheSameBytesAsTheBody() throws {
        let template = try FCMMessageTemplate(data: try liveUpdate().fields, android: FCMAndroidOptions(priority: .high))
        var buffer = [UInt8](repeating: 0xee, count: 4096)
        let count = buffer.withUnsafeMutableBytes { template.write(token: token, to: $0) }
        #expect(count == template.bodyCount(tokenByteCount: token.count))
        #expect(Array(buffer[..<count]) == template.body(token: token))
        #expect(buffer[count] == 0xee)
    }

    @Test(arguments: ["from", "notification", "message_type", "google.c.a.e", "gcm.n.e", "Google.x", ""])
    func aReservedOrEmptyDataKeyIsRefusedNamingIt(key: String) {
        #expect(throws: FCMValidationError.self) {
            try FCMMessageTemplate(data: [(key, "v")], android: FCMAndroidOptions(priority: .high))
        }
        #expect(FCMDataKey.isReserved(key) || key.isEmpty)
    }

    @Test func aRepeatedKeyAnEmptyCollapseKeyAndAnOutOfRangeTTLAreRefused() {
        let high = FCMAndroidOptions(priority: .high)
        #expect(throws: FCMValidationError(field: "message.data.k", "is given twice; a data map has each key once")) {
            try FCMMessageTemplate(data: [("k", "1"), ("k", "2")], android: high)
        }
        #expect(throws: FCMValidationError.self) { try FCMMessageTemplate(data: [], android: FCMAndroidOptions(priority: .high, collapseKey: "")) }
        do {
            _ = try FCMMessageTemplate(data: [], android: FCMAndroidOptions(priority: .high, ttl: .seconds(2_419_201)))
            Issue.record("accepted")
        } catch { #expect(error.field == "message.android.ttl") }
    }

    @Test func theSizeIsThePayloadAsFCMCountsItDataKeysAndValuesAndNotificationTextsUnescaped() throws {
        let high = FCMAndroidOptions(priority: .high)
        let limit = FCMPayloadLimit.sendableBytes
        #expect(limit == 4096 - 96)
        // Quotes escape to two bytes each in the body; FCM counts them once.
        let quotes = String(repeating: "\"", count: limit - 1 - 1 - 5)
        let fits = try FCMMessageTemplate(data: [("k", quotes)], android: high, notification: FCMNotification(title: "t", body: "bodyx"))
        #expect(fits.payloadCount == limit)
        #expect(fits.maximumBodyCount > 2 * (limit - 8), "its body is longer than FCM's 4,096 bytes, and is sent")
        do {
            _ = try FCMMessageTemplate(data: [("k", quotes + "x")], android: high, notification: FCMNotification(title: "t", body: "bodyx"))
            Issue.record("a payload over the limit was accepted")
        } catch {
            #expect(error.field == "message" && error.message.contains("\(limit + 1) bytes") && error.message.contains("by 1 bytes"), "\(error)")
        }
    }

    @Test func liveUpdateDataRefusesContentStateThatIsNotOneObject() {
        for bad in ["[1]", "{", "", #"{"a":1} x"#] {
            do { _ = try liveUpdate(contentState: bad); Issue.record("\(bad) accepted") } catch {
                #expect(error.field == "message.data.contentState")
            }
        }
        #expect(throws: FCMValidationError.self) {
            try LiveUpdateData(eventKey: "k", serial: 0, kind: .start, group: "g", contentState: Array("{}".utf8))
        }
    }

    @Test func theDataKeysAreTheDocumentedOnesInOrderAndNoneIsReserved() throws {
        #expect(try liveUpdate().fields.map(\.key) == LiveUpdateData.keys)
        #expect(try liveUpdate(title: nil).fields.map(\.key) == LiveUpdateData.keys.filter { $0 != "alertTitle" })
        #expect(!LiveUpdateData.keys.contains(where: FCMDataKey.isReserved))
    }
}
