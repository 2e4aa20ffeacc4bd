import Testing
@testable import TokenStore

/// An update's answers (`UpdateAnswers`): segments per event key and serial, read back together
/// with the next segment's number, beside the key's other records, swept after the retention and
/// removed with the key.
@Suite struct UpdateAnswersTests {
    static func answers(_ hashes: [UInt64], serial: UInt32 = 2, segment: UInt32, key: String = "eew-1", at updatedAt: UInt64 = 1_000) -> WriteOperation {
        .putUpdateAnswers(UpdateAnswers(eventKey: key, serial: serial, segment: segment, hashes: hashes, updatedAt: updatedAt))
    }

    @Test func aSerialsSegmentsReadBackAsOneSetAndOtherSerialsAndKeysStayApart() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        defer { store.close() }
        #expect(try store.updateAnswers(eventKey: "eew-1", serial: 2) == ([], 0))
        try store.write([Self.answers([1, 2], segment: 0), Self.answers([3], segment: 1), Self.answers([9], serial: 3, segment: 0),
                         Self.answers([8], segment: 0, key: "eew-10"), Self.answers([7], segment: 0, key: "eew")], durable: false)
        try store.write([.putEventSerial(EventSerialRecord(eventKey: "eew-1", serial: 2, bodyHash: [1], phase: .sending, startedAt: 1, updatedAt: 1))])
        let read = try store.updateAnswers(eventKey: "eew-1", serial: 2)
        #expect(read.hashes == [1, 2, 3] && read.nextSegment == 2)
        #expect(try store.updateAnswers(eventKey: "eew-1", serial: 3) == ([9], 1))
        // The key's other records read as before beside them.
        #expect(try store.eventRecords(eventKey: "eew-1").serials.map(\.serial) == [2])
        // A finished serial's answers go; another serial's stay.
        try store.write([.removeUpdateAnswers(eventKey: "eew-1", serial: 3)])
        #expect(try store.updateAnswers(eventKey: "eew-1", serial: 3) == ([], 0))
        #expect(try store.updateAnswers(eventKey: "eew-1", serial: 2).hashes == [1, 2, 3])
        try store.write([.removeEvent(eventKey: "eew-1")])
        #expect(try store.updateAnswers(eventKey: "eew-1", serial: 2) == ([], 0))
        #expect(try store.updateAnswers(eventKey: "eew-10", serial: 2) == ([8], 1))
    }

    @Test func segmentsAreSweptAfterTheRetention() throws {
        let fixture = StoreFixture()
        let store = try fixture.open()
        defer { store.close() }
        try store.write([Self.answers([1], segment: 0, at: 1_000), Self.answers([2], segment: 1, at: 5_000)])
        try store.write([.sweepExpired(now: 2_000 + EventStoreRecord.retentionMilliseconds, installationMaxAge: .max)])
        #expect(try store.updateAnswers(eventKey: "eew-1", serial: 2) == ([2], 2))
    }
}
