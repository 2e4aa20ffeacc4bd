#if canImport(Glibc)
import Cluster
import DaemonConfiguration
import Glibc
#endif
import IO
import Synchronization
import TokenStore
import Vocabulary

/// What identifies one shipped backup: a new ship changes its modification time or size.
package struct BackupStamp: Equatable, Sendable {
    package var seconds: Int
    package var nanoseconds: Int
    package var size: Int
}

/// How a promotion went.
public enum Promotion: Sendable, Equatable {
    /// Was a standby, is the primary now; the message says what was applied and resumed.
    case promoted(String)
    case alreadyPrimary
}

/// The warm standby (issue 13): a `Service` started with `standby` keeps its pools connected and
/// its credentials checked but sends nothing, follows the backups the primary ships to
/// `standbyBackupFile`, and becomes the primary only when told (`promote`). Never by itself:
/// without a coordinator that both nodes trust, a standby cannot tell a dead primary from a
/// partitioned one, and two senders mean two starts on every phone.
extension Service {
    package static let standbyMessage = "this daemon is a standby and sends nothing; send to the primary, or promote this one (sokuho serve --promote --config FILE, or kill -USR1 its pid)"

    public var isStandby: Bool { standby.load(ordering: .acquiring) }

    /// Where the daemon's log lines go (`DaemonLog`).
    public func setLog(_ log: DaemonLog) { self.log.withLock { $0 = log } }

    package func startFollowingBackup() {
        guard isStandby, configuration.standbyBackupFile != nil else { return }
        follower.withLock {
            // The standby's look at the shipped backup: at start, then every 30 s.
            $0 = PeriodicThread(name: "sokuho-standby", interval: .seconds(30)) { [weak self] _ in self?.followBackup() }
        }
    }

    /// Applies the shipped backup when it changed since the last look (SIGHUP, the follower's
    /// timer, a promotion). Only a standby does: a primary's store is its own.
    public func followBackup() {
        guard isStandby, let applied = applyShippedBackup() else { return }
        logger.log(applied.level, applied.message, applied.fields)
    }

    /// What a look at the shipped backup did: applied (info, with its counts) or refused (error).
    private struct BackupApplied {
        var level: LogLevel
        var message: String
        var fields: [DaemonLog.Field]
    }

    /// Checks `standbyBackupFile`; when its stamp changed, copies and checks it next to the
    /// store, then swaps the open store for it. Returns what happened, or nil when nothing did.
    private func applyShippedBackup() -> BackupApplied? {
        guard let path = configuration.standbyBackupFile else { return nil }
        return followedBackup.withLock { last -> BackupApplied? in
            let file = TokenStore.backupFile(path)
            var info = stat()
            guard stat(file, &info) == 0 else { return nil } // nothing shipped yet
            let stamp = BackupStamp(seconds: Int(info.st_mtim.tv_sec), nanoseconds: Int(info.st_mtim.tv_nsec), size: Int(info.st_size))
            guard stamp != last else { return nil }
            // Remembered either way: a broken file is reported once, not copied again every 30 s;
            // the next ship changes the stamp.
            last = stamp
            do throws(StoreError) {
                let staged = try TokenStore.stageRestore(backup: file, into: configuration.storePath)
                try stores.replace { (store: inout TokenStore) throws(StoreError) in
                    // Nothing is written on a standby; closing stops the writer thread. Readers
                    // holding the old store finish on its (unlinked) file.
                    store.close()
                    do throws(StoreError) { try staged.install(keepOldAs: nil) } catch { staged.discard(); throw error }
                    store = try TokenStore(directory: configuration.storePath)
                }
                tokenStatistics.invalidate()
                backupAppliedAt.store(Int(WallClock.seconds()), ordering: .releasing)
                return BackupApplied(level: .info, message: "sokuho serve: standby: applied the backup \(file): \(staged.report.installations) installations, \(staged.report.tokens) tokens",
                                     fields: [("backup", .text(file)), ("installations", .int(staged.report.installations)), ("tokens", .int(staged.report.tokens))])
            } catch {
                return BackupApplied(level: .error, message: "sokuho serve: standby: the backup \(file) was not applied (\(error.description)); keeping the store as it was",
                                     fields: [("backup", .text(file))])
            }
        }
    }

    /// Makes a standby the primary: a last look at the shipped backup, then the events its store
    /// holds as accepted and unfinished are resumed, and events and registrations are accepted.
    public func promote() -> Promotion {
        // One promotion: the follower is stopped first, so no backup swaps the store afterwards.
        guard isStandby else { return .alreadyPrimary }
        follower.stopThread()
        let applied = applyShippedBackup()
        guard standby.compareExchange(expected: true, desired: false, ordering: .acquiringAndReleasing).exchanged else {
            return .alreadyPrimary
        }
        let pending = (try? store.eventSerials(in: .sending)) ?? []
        resume(pending)
        startShardWorkers()
        var message = "sokuho serve: promoted to primary: sending from now on"
        if let applied { message += "; " + applied.message.dropFirst("sokuho serve: standby: ".count) }
        message += "; \(pending.count) unfinished events resumed"
        logger.log(applied?.level ?? .info, message, [("resumed", .int(pending.count))])
        return .promoted(message)
    }
}

extension Service {
    /// The admin token in `path`, as the daemon reads it (`sokuho serve --promote` sends it).
    public static func adminToken(fromFile path: String) throws(ServiceError) -> [UInt8] { try readAdminToken(path) }
}
