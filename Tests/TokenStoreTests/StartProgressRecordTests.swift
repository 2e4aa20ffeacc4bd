import Testing
@testable import TokenStore

/// The start checkpoint's record (StartProgress+Format.swift): one versioned format for the store,
/// a cluster's Redis copy and the replicated writes, a part per provider lane; what sokuho wrote
/// before versions still reads, and a later format is refused by name, never misread.
@Suite struct StartProgressRecordTests {
    static func progress(offWire: [UInt64]) -> StartProgress {
        StartProgress(eventKey: "eew-1", topic: "region:301", app: "com.example.eew", environment: .production, doneLevel: 2, scanLevel: 5,
                      completed: [32, 0, 1] + Array(repeating: 7, count: 32), submitted: [32, 0, 1] + Array(repeating: 9, count: 32),
                      answered: [1, 2, 3], offWire: offWire, updatedAt: 1_764_000_000_000)
    }

    static let androidPart = StartProgress.ProviderProgress(completed: [152, 0, 3] + Array(repeating: 65, count: 152),
                                                            submitted: [160, 0, 3] + Array(repeating: 66, count: 160),
                                                            answered: [11, 12], offWire: [13])

    static func read(_ bytes: [UInt8]) throws -> StartProgress { try StartProgress(eventKey: "eew-1", topic: "region:301", recordBytes: bytes) }

    /// Format 1 as sokuho wrote it before versions (kept here, byte for byte, as the fixture the
    /// reader must go on accepting): common fields, the APNs part and `updatedAt`, then off-the-wire
    /// hashes only when not empty or before an Android part, then the Android part.
    static func formatOne(_ progress: StartProgress) -> [UInt8] {
        var bytes: [UInt8] = []
        func varint(_ value: Int) {
            var rest = UInt64(value)
            repeat {
                let low = UInt8(rest & 0x7f)
                rest >>= 7
                bytes.append(rest == 0 ? low : low | 0x80)
            } while rest != 0
        }
        func data(_ value: [UInt8]) { varint(value.count); bytes += value }
        func uint64(_ value: UInt64) { for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) } }
        data(Array(progress.app.utf8))
        bytes += [1, progress.doneLevel == nil ? 0 : 1, progress.doneLevel ?? 0, progress.scanLevel == nil ? 0 : 1, progress.scanLevel ?? 0]
        data(progress.completed)
        data(progress.submitted)
        varint(progress.answered.count)
        progress.answered.forEach(uint64)
        uint64(progress.updatedAt)
        if !progress.offWire.isEmpty || progress.android != nil {
            varint(progress.offWire.count)
            progress.offWire.forEach(uint64)
        }
        if let android = progress.android {
            data(android.completed)
            data(android.submitted)
            varint(android.answered.count)
            android.answered.forEach(uint64)
            varint(android.offWire.count)
            android.offWire.forEach(uint64)
        }
        return bytes
    }

    @Test func everyLanesPartSurvivesTheRoundTripWithOrWithoutOffWireHashes() throws {
        for offWire: [UInt64] in [[], [UInt64.max, 42]] {
            var written = Self.progress(offWire: offWire)
            #expect(try Self.read(written.recordBytes) == written)
            written.android = Self.androidPart
            #expect(try Self.read(written.recordBytes) == written)
            // An empty part is a part: its scan had not handed anything out yet, which is not "as the others".
            written.android = StartProgress.ProviderProgress()
            #expect(try Self.read(written.recordBytes).android == StartProgress.ProviderProgress())
        }
    }

    @Test func aRecordIsWrittenInTheCurrentFormatAndOneWrittenBeforeVersionsStillReads() throws {
        #expect(Array(Self.progress(offWire: []).recordBytes.prefix(2)) == [0, StartProgress.formatVersion])
        #expect(StartProgress.formatVersion == 2)
        for offWire: [UInt64] in [[], [5]] {
            for android in [nil, Self.androidPart] {
                var earlier = Self.progress(offWire: offWire)
                earlier.android = android
                #expect(try Self.read(Self.formatOne(earlier)) == earlier, "offWire \(offWire), android \(android != nil)")
            }
        }
    }

    @Test func aRecordOfALaterFormatIsRefusedNamingBothVersions() {
        var bytes = Self.progress(offWire: []).recordBytes
        bytes[1] = 3
        #expect {
            try Self.read(bytes)
        } throws: { error in
            let text = "\(error)"
            return text.contains("checkpoint format 3") && text.contains("reads formats 1 to 2") && text.contains("upgrade")
        }
    }

    @Test func aPartForALaneThisSokuhoDoesNotKnowIsRefusedNotSkipped() {
        var written = Self.progress(offWire: [])
        written.android = StartProgress.ProviderProgress()
        var bytes = written.recordBytes
        // The FCM part is last: its lane byte comes right after the APNs part.
        let apnsPartEnd = Self.progress(offWire: []).recordBytes.count
        #expect(bytes[apnsPartEnd] == 2)
        bytes[apnsPartEnd] = 9
        #expect {
            try Self.read(bytes)
        } throws: { error in "\(error)".contains("provider lane 9, which this sokuho does not know") }
    }

    @Test func aTruncatedRecordIsRefusedNotReadAsFewer() {
        for android in [nil, Self.androidPart] {
            var written = Self.progress(offWire: [5, 6])
            written.android = android
            for cut in [3, 8, 17] {
                let bytes = Array(written.recordBytes.dropLast(cut))
                #expect(throws: StoreError.self) { try Self.read(bytes) }
            }
        }
    }
}
