/// Real payloads from the project's examples (copied, so tests never read outside the package): the
/// bodies Sokuho must render and accept byte for byte.
enum ExamplePayloads {
    /// eew-start.json: earthquake early warning: push-to-start subscribing to the region's channel
    static let eewStart = Array(#"{"aps":{"timestamp":1787418000,"event":"start","attributes-type":"EewLiveActivityAttributes","attributes":{"id":"0b7f6c1e-5d0e-4f8e-9a41-2f3f8f1a7c10","eventId":"20260823020012"},"input-push-channel":"dHN0LWNoYW5uZWwtcmVnaW9uLTMwMQ==","alert":{"title":"緊急地震速報（警報）","body":"茨城県南部で地震 茨城県 栃木県 千葉県で強い揺れ","sound":"default"},"content-state":{"eventId":"20260823020012","type":"eew","headline":"茨城県南部で地震 茨城県 栃木県 千葉県で強い揺れ","hypocenterName":"茨城県南部","magnitude":5.9,"depth":68,"time":"2026-08-23T02:00:12+09:00","isOriginTime":true,"maxIntensity":"5-","serialNo":1,"isFinal":false,"isWarning":true,"isCanceled":false,"isPlum":false,"isLevel":false,"isOnePoint":false,"location":{"regionName":"茨城県南部","forecastIntensity":"5-","isWarning":true,"arrivalTime":"2026-08-23T02:00:21+09:00"}}}}"#.utf8)

    /// eew-update.json: the next serial of the same warning, sent to the region's channel
    static let eewUpdate = Array(#"{"aps":{"timestamp":1787418004,"event":"update","content-state":{"eventId":"20260823020012","type":"eew","headline":"茨城県南部で地震 茨城県 栃木県 千葉県 埼玉県で強い揺れ","hypocenterName":"茨城県南部","magnitude":6.1,"depth":66,"time":"2026-08-23T02:00:12+09:00","isOriginTime":true,"maxIntensity":"5+","serialNo":2,"isFinal":false,"isWarning":true,"isCanceled":false,"isPlum":false,"isLevel":false,"isOnePoint":false,"location":{"regionName":"茨城県南部","forecastIntensity":"5+","isWarning":true,"arrivalTime":"2026-08-23T02:00:20+09:00"}}}}"#.utf8)

    /// eew-end.json: the final report, leaving the Lock Screen at dismissal-date
    static let eewEnd = Array(#"{"aps":{"timestamp":1787418060,"event":"end","dismissal-date":1787419860,"content-state":{"eventId":"20260823020012","type":"eew","headline":"茨城県南部で地震（最終報）","hypocenterName":"茨城県南部","magnitude":6.1,"depth":66,"time":"2026-08-23T02:00:12+09:00","isOriginTime":true,"maxIntensity":"5+","serialNo":6,"isFinal":true,"isWarning":true,"isCanceled":false,"isPlum":false,"isLevel":false,"isOnePoint":false,"location":{"regionName":"茨城県南部","forecastIntensity":"5+","isWarning":true}}}}"#.utf8)

    /// train-update.json: train follow: next station changed, with a stale-date
    static let trainUpdate = Array(#"{"aps":{"timestamp":1784453400,"event":"update","stale-date":1784453520,"content-state":{"trainId":"123D","serviceDate":"2026-07-19","currentStation":"丸亀～宇多津","nextStation":"宇多津","delayMinutes":3,"scheduledArrival":"18:42","updatedAt":1784453400}}}"#.utf8)

    /// election-update.json: election night: seats counted, with a relevance-score
    static let electionUpdate = Array(#"{"aps":{"timestamp":1770555600,"event":"update","relevance-score":75,"content-state":{"counted":312,"total":465,"majority":233,"parties":[{"name":"A","seats":171},{"name":"B","seats":96},{"name":"C","seats":45}],"headline":"開票率 67%","updatedAt":1770555600}}}"#.utf8)

    /// The payloads by file name, for parameterised tests (a name reads better in the test log than bytes).
    static let byName: [String: [UInt8]] = [
        "eew-start.json": eewStart, "eew-update.json": eewUpdate, "eew-end.json": eewEnd,
        "train-update.json": trainUpdate, "election-update.json": electionUpdate,
    ]
}
