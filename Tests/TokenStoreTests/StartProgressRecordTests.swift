import Testing
@testable import TokenStore

/// The start checkpoint's record layout: what waited off the wire for a back-off resend is kept,
/// and a checkpoint without any is byte for byte what sokuho wrote before the field existed (so a
/// store or a cluster's Redis copy written by either reads in both, as long as none is waiting).
@Suite struct StartProgressRecordTests {
    static func progress(offWire: [UInt64]) -> StartProgress {
        StartProgress(eventKey: "eew-1", topic: "region:301", app: "com.example.eew", environment: .production, doneLevel: 2, scanLevel: 5,
                      completed: [32, 0, 1] + Array(repeating: 7, count: 32), submitted: [32, 0, 1] + Array(repeating: 9, count: 32),
                      answered: [1, 2, 3], offWire: offWire, updatedAt: 1_764_000_000_000)
    }

    @Test func offWireHashesSurviveTheRoundTrip() throws {
        let written = Self.progress(offWire: [UInt64.max, 42])
        let read = try StartProgress(eventKey: "eew-1", topic: "region:301", recordBytes: written.recordBytes)
        #expect(read == written)
        #expect(read.offWire == [UInt64.max, 42])
    }

    @Test func aCheckpointWithNothingOffTheWireHasTheEarlierLayoutAndAnEarlierRecordReads() throws {
        let bytes = Self.progress(offWire: []).recordBytes
        // The field is appended after everything the earlier layout had, and only when not empty.
        let withOne = Self.progress(offWire: [5]).recordBytes
        #expect(withOne.starts(with: bytes))
        #expect(withOne.count == bytes.count + 1 + 8)
        let read = try StartProgress(eventKey: "eew-1", topic: "region:301", recordBytes: bytes)
        #expect(read.offWire.isEmpty)
        #expect(read == Self.progress(offWire: []))
    }

    @Test func anAndroidPartSurvivesTheRoundTripWithOrWithoutOffWireHashes() throws {
        for offWire: [UInt64] in [[], [5]] {
            var written = Self.progress(offWire: offWire)
            written.android = StartProgress.ProviderProgress(completed: [152, 0, 3] + Array(repeating: 65, count: 152),
                                                             submitted: [160, 0, 3] + Array(repeating: 66, count: 160),
                                                             answered: [11, 12], offWire: [13])
            let bytes = written.recordBytes
            let read = try StartProgress(eventKey: "eew-1", topic: "region:301", recordBytes: bytes)
            #expect(read == written)
            // After everything a record without it has, so a reader from before refuses it (trailing bytes).
            let plain = Self.progress(offWire: offWire).recordBytes
            #expect(bytes.starts(with: plain.isEmpty ? [] : Array(plain.prefix(plain.count - (offWire.isEmpty ? 0 : 9)))))
            // An empty part is a part: its scan had not handed anything out yet, which is not "as the others".
            written.android = StartProgress.ProviderProgress()
            #expect(try StartProgress(eventKey: "eew-1", topic: "region:301", recordBytes: written.recordBytes).android == StartProgress.ProviderProgress())
        }
    }

    @Test func aTruncatedOffWireListIsRefusedNotReadAsFewer() {
        var bytes = Self.progress(offWire: [5, 6]).recordBytes
        bytes.removeLast(3)
        #expect(throws: StoreError.self) { try StartProgress(eventKey: "eew-1", topic: "region:301", recordBytes: bytes) }
    }
}
