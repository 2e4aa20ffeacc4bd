import Fanout
import TokenStore
import Vocabulary

/// What this node remembers, in its own store, of the events it offered to the cluster — so that
/// while Redis is unreachable it never runs alone an event the cluster may already have:
///
/// - `asked`: written (durably) before the accept script is sent; it stays when the answer was
///   lost, since Redis may have recorded the event. Removed again when Redis was never reached.
/// - `accepted`: Redis answered that it has the event (new, or the same body again).
/// - `lost`: Redis answered, and no longer has an event it had accepted (a restart without an
///   append-only file, a flush): whatever it had not sent yet was never sent.
///
/// A key with any such record is **in doubt** while Redis cannot be reached: its submission is
/// refused with 503 and Retry-After until Redis answers, instead of being run here alone beside the
/// cluster's run. A key this node never offered runs alone, as before: a warning must go out during
/// an outage. Kept per node, not replicated: another node that cannot reach Redis either does not
/// know the key (README, "Cluster").
package enum ClusterAcceptances {
    package enum State: Sendable, Equatable {
        case asked, accepted, lost

        /// The store's phases carry the three states (the record has its own key, so its phase
        /// never reads as an event's own).
        init(_ phase: EventSerialRecord.Phase) {
            switch phase {
            case .sending: self = .asked
            case .done: self = .accepted
            case .stopped: self = .lost
            }
        }

        var phase: EventSerialRecord.Phase {
            switch self {
            case .asked: .sending
            case .accepted: .done
            case .lost: .stopped
            }
        }
    }

    package struct Record: Sendable {
        package var serial: UInt32
        package var state: State
        /// When this node first offered it (ms since 1970).
        package var askedAt: UInt64
        /// The event as offered (canonical JSON).
        package var body: [UInt8]

        /// Until when the event could still have been sending: its deadline from when it was asked.
        package var sendingUntil: UInt64 {
            let deadline = (try? FanoutEvent(json: body))?.deadline ?? .zero
            return askedAt + UInt64(max(0, deadline.milliseconds))
        }
    }

    /// Every serial of `key` this node offered to the cluster.
    package static func records(key: String, in store: TokenStore) throws(StoreError) -> [Record] {
        try store.eventRecords(eventKey: AcceptanceRecordKey.make(eventKey: key)).serials.map {
            Record(serial: $0.serial, state: State($0.phase), askedAt: $0.startedAt, body: $0.body)
        }
    }

    /// Every event Redis said it accepted from this node, by event key (what is checked after
    /// Redis lost its data).
    package static func accepted(in store: TokenStore) throws(StoreError) -> [(key: String, record: Record)] {
        try store.eventSerials(in: State.accepted.phase).filter { AcceptanceRecordKey.isAcceptance($0.eventKey) }.map {
            (String($0.eventKey.dropLast(AcceptanceRecordKey.make(eventKey: "").count)),
             Record(serial: $0.serial, state: .accepted, askedAt: $0.startedAt, body: $0.body))
        }
    }

    /// Records `state` for the event's serial (durably: it must outlive a crash right after).
    package static func note(_ state: State, key: String, serial: UInt32, bodyHash: [UInt8], body: [UInt8], askedAt: UInt64,
                             in store: TokenStore) throws(StoreError) {
        let record = EventSerialRecord(eventKey: AcceptanceRecordKey.make(eventKey: key), serial: serial, bodyHash: bodyHash, phase: state.phase,
                                       startedAt: askedAt, updatedAt: WallClock.milliseconds(), body: body)
        try store.write([.putEventSerial(record)])
    }

    /// Forgets every serial of `key` (only when this node's one record was an ask that never
    /// reached Redis).
    package static func forget(key: String, in store: TokenStore) throws(StoreError) {
        try store.write([.removeEvent(eventKey: AcceptanceRecordKey.make(eventKey: key))])
    }
}
