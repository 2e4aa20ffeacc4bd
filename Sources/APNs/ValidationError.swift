/// A value, request or payload that APNs would refuse (or that would misbehave on the device), caught
/// before anything is sent. `field` names the header, `aps` key or argument at fault; `message` says what
/// is wrong and how to fix it, so a CLI can print it as is.
public struct ValidationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The header (`apns-topic`), payload key (`aps.alert`) or argument the error is about.
    public let field: String
    /// What is wrong and what to do about it.
    public let message: String
    /// The reason APNs itself answers for this mistake, when there is one (a simulator answers with it).
    public let reason: Reason?

    public init(field: String, _ message: String, reason: Reason? = nil) {
        self.field = field
        self.message = message
        self.reason = reason
    }

    public var description: String { "\(field): \(message)" }
}
