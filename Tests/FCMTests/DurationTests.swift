import FCM
import Testing

/// `android.ttl` in FCM's duration form, both ways.
@Suite struct DurationTests {
    @Test(arguments: [
        (Duration.zero, "0s"), (.seconds(60), "60s"), (.milliseconds(3500), "3.5s"), (.nanoseconds(1), "0.000000001s"),
        (.milliseconds(10), "0.01s"), (.seconds(2_419_200), "2419200s"), (.seconds(1) + .nanoseconds(120), "1.00000012s"),
    ])
    func aTTLIsWrittenAsFCMWritesItAndReadsBack(duration: Duration, text: String) throws {
        #expect(try FCMDuration.ttl(duration) == text)
        #expect(FCMDuration.parse(text) == duration)
    }

    @Test(arguments: [Duration.seconds(2_419_201), .seconds(-1), .nanoseconds(-1)])
    func aTTLOutsideZeroToFourWeeksIsRefused(duration: Duration) {
        #expect(throws: FCMValidationError.self) { try FCMDuration.ttl(duration) }
    }

    @Test func aTTLFinerThanANanosecondIsRefused() {
        #expect(throws: FCMValidationError.self) { try FCMDuration.ttl(Duration(secondsComponent: 1, attosecondsComponent: 1)) }
    }

    @Test(arguments: ["10", "s", "-1s", "1.s", ".5s", "1.0000000001s", "1e3s", "1,5s", " 1s", "1234567890123s", "3.5S"])
    func textThatIsNotADurationIsNotParsed(text: String) {
        #expect(FCMDuration.parse(text) == nil)
    }
}
