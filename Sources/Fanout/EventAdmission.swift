import TokenStore

/// What an event's key + serial + body means against the serials already stored under its key —
/// the one statement of these rules. `sokuho fanout` (`Fanout.run`) and the daemon
/// (`Service.submit`) both ask here, and each words the answer its own way (an exit code and a
/// CLI message; an HTTP status and an error code). Pure: the caller reads the records and acts.
public struct EventAdmission: Sendable, Equatable {
    public enum Decision: Sendable, Equatable {
        /// A higher serial of the key was accepted already (the highest such serial, as the
        /// records list it last): this one is out of date and is refused.
        case superseded(by: UInt32)
        /// This serial was accepted with another body: new content needs a higher serial.
        case conflict
        /// This serial with this body ran to the end: nothing is sent again. The record holds its
        /// report.
        case alreadySent(EventSerialRecord)
        /// This serial with this body was accepted, interrupted or stopped: running it resumes it,
        /// adding to what it did (the record holds that).
        case resume(EventSerialRecord)
        /// A serial the key has not seen, above all it has.
        case new
    }

    public let serial: UInt32
    /// SHA-256 of the event's canonical JSON (`FanoutEvent.canonicalJSON`), as the records keep it.
    public let bodyHash: [UInt8]

    public init(serial: UInt32, bodyHash: [UInt8]) {
        self.serial = serial
        self.bodyHash = bodyHash
    }

    /// Whether `record` is of this serial sent with this body (a shard's record included).
    public func isSame(_ record: EventSerialRecord) -> Bool { record.serial == serial && record.bodyHash == bodyHash }

    /// Whether `record` is of an earlier serial of the key (one this serial supersedes).
    public func supersedes(_ record: EventSerialRecord) -> Bool { record.serial < serial }

    /// The decision given the key's stored serial records (in the store's order: ascending).
    public func decision(given stored: [EventSerialRecord]) -> Decision {
        if let newer = stored.last(where: { $0.serial > serial }) { return .superseded(by: newer.serial) }
        guard let same = stored.first(where: { $0.serial == serial }) else { return .new }
        guard same.bodyHash == bodyHash else { return .conflict }
        return same.phase == .done ? .alreadySent(same) : .resume(same)
    }
}
