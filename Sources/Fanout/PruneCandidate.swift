import APNs

/// A token APNs called dead, to be removed from the store once the event has ended.
struct PruneCandidate: Sendable {
    let kind: TokenKind
    let token: [UInt8]
    /// A 410's timestamp (ms): removed only if registered before it. Nil: removed regardless.
    let registeredBefore: UInt64?
    let reason: String
}
