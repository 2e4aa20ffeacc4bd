import APNs

/// A token APNs or FCM called dead, to be removed from the store once the event has ended.
struct PruneCandidate: Sendable {
    let kind: TokenKind
    let token: [UInt8]
    /// A 410's timestamp (ms): removed only if registered before it. Nil: removed regardless.
    let registeredBefore: UInt64?
    let reason: String
    /// Refused as a bad token (not a dead one): pruned only once the breaker judged its group clean.
    var behindBreaker = false
}
