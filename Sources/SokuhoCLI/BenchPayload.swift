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
}
