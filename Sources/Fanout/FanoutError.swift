/// Why a fan-out could not run or had to stop, in words a user can act on, with the kind of
/// failure a command line turns into its exit code.
public struct FanoutError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable {
        /// The event is invalid, or conflicts with what was sent under its key.
        case invalidEvent
        /// The token store failed (the message says how).
        case store
        /// APNs or the simulator could not be reached.
        case unavailable
        /// APNs refused a request the event needs (a channel, the credentials).
        case refused
        /// The credentials or the event's environment/topic are wrong (the circuit breaker).
        case config
        /// Too many requests are already waiting (the channel host's queue of an app): try later.
        case busy
    }

    public let kind: Kind
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
