import FCM
import Vocabulary

/// The benchmark's push: a realistic ≈900-byte earthquake-warning push-to-start (the shape of
/// shared/examples/eew-start.json), so every number measures the real body size.
enum BenchPayload {
    static let bundle = "com.example.eew"

    static func body(timestamp: Int64) -> [UInt8] {
        Array("""
        {"aps":{"timestamp":\(timestamp),"event":"start","attributes-type":"EewLiveActivityAttributes","attributes":{"id":"0b7f6c1e-5d0e-4f8e-9a41-2f3f8f1a7c10","eventId":"20260823020012"},"input-push-channel":"dHN0LWNoYW5uZWwtcmVnaW9uLTMwMQ==","alert":{"title":"緊急地震速報（警報）","body":"茨城県南部で地震 茨城県 栃木県 千葉県で強い揺れ","sound":"default"},"content-state":{"eventId":"20260823020012","type":"eew","headline":"茨城県南部で地震 茨城県 栃木県 千葉県で強い揺れ","hypocenterName":"茨城県南部","magnitude":5.9,"depth":68,"time":"2026-08-23T02:00:12+09:00","isOriginTime":true,"maxIntensity":"5-","serialNo":1,"isFinal":false,"isWarning":true,"isCanceled":false,"isPlum":false,"isLevel":false,"isOnePoint":false,"location":{"regionName":"茨城県南部","forecastIntensity":"5-","isWarning":true,"arrivalTime":"2026-08-23T02:00:21+09:00"}}}}
        """.utf8)
    }

    /// The headers of a push-to-start to `bundle`.
    static func headers(bundle: String) -> [(name: String, value: String)] {
        [("apns-push-type", "liveactivity"), ("apns-topic", bundle + ".push-type.liveactivity"),
         ("apns-priority", "10"), ("apns-expiration", "0")]
    }

    /// The same warning as an FCM Live Update (the content state and alert above in its data map),
    /// so the two providers' figures compare messages of the same content.
    static let fcmTemplate: FCMMessageTemplate = {
        let contentState = #"{"eventId":"20260823020012","type":"eew","headline":"茨城県南部で地震 茨城県 栃木県 千葉県で強い揺れ","hypocenterName":"茨城県南部","magnitude":5.9,"depth":68,"time":"2026-08-23T02:00:12+09:00","isOriginTime":true,"maxIntensity":"5-","serialNo":1,"isFinal":false,"isWarning":true,"isCanceled":false,"isPlum":false,"isLevel":false,"isOnePoint":false,"location":{"regionName":"茨城県南部","forecastIntensity":"5-","isWarning":true,"arrivalTime":"2026-08-23T02:00:21+09:00"}}"#
        do {
            let data = try LiveUpdateData(eventKey: "eew-20260823020012", serial: 1, kind: .start, group: "region:301",
                                          contentState: Array(contentState.utf8), alertTitle: "緊急地震速報（警報）",
                                          alertBody: "茨城県南部で地震 茨城県 栃木県 千葉県で強い揺れ")
            return try FCMMessageTemplate(data: data.fields, android: FCMAndroidOptions(priority: .high, ttl: .seconds(60), collapseKey: "eew"))
        } catch {
            preconditionFailure("the bench's FCM message: \(error)")
        }
    }()

    /// An FCM registration token of the usual length (163 characters) whose first 8 are the
    /// push's index in hex (`fcmTokenHead`), so every push goes to another phone.
    static let fcmToken = DeviceToken(bytes: Array(("00000000:APA91b" + String(repeating: "x", count: 148)).utf8))!

    /// `index` as 8 hex digits, written over the token's first 8 bytes: FCM's alphabet, no allocation.
    static func fcmTokenHead(_ index: Int) -> UInt64 {
        var word: UInt64 = 0
        for shift in stride(from: 28, through: 0, by: -4) {
            word = word << 8 | UInt64(Hex.digit(UInt8((index >> shift) & 0xF)))
        }
        return word
    }
}
