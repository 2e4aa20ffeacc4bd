import CLMDB
import Glibc
import Testing
@testable import TokenStore

/// `TokenStore.merge`: the parts a large import writes become one store in a single pass. It must
/// be exactly the store that writing the same operations in order gives, or refuse.
struct StoreMergeTests {
    /// Operations that touch an installation, in order, keyed by its id (a register's).
    static func installationID(_ operation: WriteOperation) -> String? {
        if case let .register(registration, _) = operation { return registration.installationID }
        return nil
    }

    /// `BackupTests.operations()` dealt into `count` parts: an installation's registrations to
    /// one part (by its position among the ids), activities round-robin (so one event key's
    /// index holds duplicates from every part), everything else to the first part.
    static func parts(_ count: Int) -> [[WriteOperation]] {
        var parts = [[WriteOperation]](repeating: [], count: count)
        var activities = 0
        for operation in BackupTests.operations() {
            if let id = installationID(operation) {
                parts[BackupTests.ids.firstIndex(of: id)! % count].append(operation)
            } else if case .putActivity = operation {
                parts[activities % count].append(operation)
                activities += 1
            } else {
                parts[0].append(operation)
            }
        }
        return parts
    }

    /// Writes each part into its own store under `fixture`; their directories.
    static func write(_ parts: [[WriteOperation]], under fixture: StoreFixture) throws -> [String] {
        var directories: [String] = []
        for (index, operations) in parts.enumerated() {
            let directory = fixture.directory + "/part-\(index + 1)"
            let store = try TokenStore(directory: directory)
            try store.write(operations)
            store.close()
            directories.append(directory)
        }
        return directories
    }

    @Test(arguments: [1, 2, 3, 7])
    func mergingPartsThatShareNoKeyGivesTheStoreThatWritingThemInOrderGives(partCount: Int) throws {
        let fixture = StoreFixture()
        let whole = try TokenStore(directory: fixture.directory + "/whole")
        try BackupTests.fill(whole)
        let parts = try Self.write(Self.parts(partCount), under: fixture)
        let destination = fixture.directory + "/merged"
        #expect(try TokenStore.merge(parts: parts, into: destination) == .merged)
        let merged = try TokenStore(directory: destination, options: TokenStore.Options(readOnly: true))

        #expect(try BackupTests.entries(merged) == (try BackupTests.entries(whole)))
        #expect(try BackupTests.export(merged) == (try BackupTests.export(whole)))
        #expect(try merged.check().isConsistent)
        for topic in BackupTests.topicNames {
            for level: UInt8 in [0, 2, 5] {
                #expect(try merged.scannedTargets(topic, level: level) == (try whole.scannedTargets(topic, level: level)))
            }
        }
        #expect(try merged.activities(eventKey: "eew-1") == (try whole.activities(eventKey: "eew-1")))
        // Packed as a backup is: the same leaf pages as a backup of the whole.
        try whole.backup(to: fixture.directory + "/backup")
        let backup = try TokenStore(directory: fixture.directory + "/backup", options: TokenStore.Options(readOnly: true))
        #expect(try BackupTests.leafPages(merged) == (try BackupTests.leafPages(backup)))
    }

    @Test func partsThatShareAnInstallationAreRefusedAndLeaveNoStore() throws {
        let fixture = StoreFixture()
        let parts = try Self.write([[.register(registration("phone-1", token(1)), at: 1_000)],
                                    [.register(registration("phone-1", token(2), kind: .device), at: 2_000)]], under: fixture)
        let destination = fixture.directory + "/merged"
        #expect(try TokenStore.merge(parts: parts, into: destination) == .overlapping(database: "installations"))
        #expect(access(destination + "/data.mdb", F_OK) != 0)
        // The destination can be used again.
        #expect(try TokenStore.merge(parts: [parts[0]], into: destination) == .merged)
    }

    @Test func partsThatShareOnlyATokenAreRefused() throws {
        let fixture = StoreFixture()
        // Applied in order, the token would move from phone-1 to phone-2; their union would keep it twice.
        let parts = try Self.write([[.register(registration("phone-1", token(1)), at: 1_000)],
                                    [.register(registration("phone-2", token(1)), at: 2_000)]], under: fixture)
        #expect(try TokenStore.merge(parts: parts, into: fixture.directory + "/merged") == .overlapping(database: "tokens"))
    }

    @Test func aMergeRefusesADestinationThatHoldsAStore() throws {
        let fixture = StoreFixture()
        let parts = try Self.write([[.register(registration("phone-1", token(1)), at: 1_000)]], under: fixture)
        #expect(throws: StoreError.self) { try TokenStore.merge(parts: parts, into: parts[0]) }
        #expect(try TokenStore(directory: parts[0]).installation(id: "phone-1") != nil)
    }
}
