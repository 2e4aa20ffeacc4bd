import Crypto
import Testing

/// APNs' token refusals turned into clock diagnoses. The window used starts at 1_800_000_000
/// (2027-01-15T08:00:00Z).
@Suite struct ProviderTokenClockDiagnosisTests {
    private let iat: Int64 = 1_800_000_000

    /// Expected strings were printed by GNU `date -u -d @SECONDS +%Y-%m-%dT%H:%M:%SZ`.
    @Test("UTC timestamps format as YYYY-MM-DDTHH:MM:SSZ across leap days, centuries and 1970", arguments: [
        (Int64(0), "1970-01-01T00:00:00Z"),
        (1_800_000_000, "2027-01-15T08:00:00Z"),
        (951_782_400, "2000-02-29T00:00:00Z"),
        (951_868_799, "2000-02-29T23:59:59Z"),
        (1_709_210_096, "2024-02-29T12:34:56Z"),
        (4_102_444_800, "2100-01-01T00:00:00Z"),
        (253_402_300_799, "9999-12-31T23:59:59Z"),
        (-1, "1969-12-31T23:59:59Z"),
    ])
    func iso8601(seconds: Int64, expected: String) {
        #expect(ProviderTokenClockDiagnosis.iso8601(seconds) == expected)
    }

    @Test("An expired token that is at most 50 minutes old locally blames this machine's clock being behind, with its time and the iat")
    func expiredYoungTokenMeansClockBehind() throws {
        let message = try #require(ProviderTokenClockDiagnosis.diagnose(reason: "ExpiredProviderToken", issuedAt: iat,
                                                                       now: iat + 50 * 60, earlierTokenAccepted: true))
        #expect(message.contains("this machine's clock is at least 10 minutes behind APNs'"))
        #expect(message.contains("2027-01-15T08:50:00Z"))   // local now
        #expect(message.contains("2027-01-15T08:00:00Z"))   // iat
        let younger = try #require(ProviderTokenClockDiagnosis.diagnose(reason: "ExpiredProviderToken", issuedAt: iat,
                                                                       now: iat + 5 * 60, earlierTokenAccepted: false))
        #expect(younger.contains("at least 55 minutes behind"))
    }

    @Test("An expired token older than 50 minutes locally is not blamed on the clock")
    func expiredOldTokenIsNotAClockProblem() {
        #expect(ProviderTokenClockDiagnosis.diagnose(reason: "ExpiredProviderToken", issuedAt: iat, now: iat + 50 * 60 + 1,
                                                     earlierTokenAccepted: true) == nil)
    }

    @Test("An invalid token just after a window switch, while the earlier token worked, suggests the clock is ahead")
    func invalidRightAfterSwitchMeansClockAhead() throws {
        let message = try #require(ProviderTokenClockDiagnosis.diagnose(reason: "InvalidProviderToken", issuedAt: iat,
                                                                       now: iat + 40, earlierTokenAccepted: true))
        #expect(message.contains("clock may be ahead"))
        #expect(message.contains("in APNs' future"))
        #expect(message.contains("2027-01-15T08:00:00Z") && message.contains("2027-01-15T08:00:40Z"))
    }

    @Test("An invalid token is not blamed on the clock when no earlier token worked, or long after the switch")
    func invalidOtherwiseIsNotAClockProblem() {
        #expect(ProviderTokenClockDiagnosis.diagnose(reason: "InvalidProviderToken", issuedAt: iat, now: iat + 40,
                                                     earlierTokenAccepted: false) == nil)
        #expect(ProviderTokenClockDiagnosis.diagnose(reason: "InvalidProviderToken", issuedAt: iat, now: iat + 300,
                                                     earlierTokenAccepted: true) == nil)
        #expect(ProviderTokenClockDiagnosis.diagnose(reason: "BadDeviceToken", issuedAt: iat, now: iat + 40,
                                                     earlierTokenAccepted: true) == nil)
    }
}
