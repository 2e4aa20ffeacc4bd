import Sender

/// How an event reaches the app's Android phones: FCM HTTP v1 through a pool whose provider is
/// `.fcm` (its access tokens name the Firebase project). Set on `FanoutOptions.android`; without
/// it an event reaches iOS phones only and its Android installations are counted, not sent to
/// (`FanoutReport.androidSkipped`), so an operator sees whom a configuration without an
/// `android` member leaves out.
public struct AndroidLane: Sendable {
    /// The FCM pool's configuration (`provider` `.fcm`), for a run that opens its own.
    public var pool: PoolConfiguration
    /// The daemon's warm FCM pool, shared by its events; nil: the run opens one from `pool`.
    public var sharedPool: ConnectionPool?

    public init(pool: PoolConfiguration, sharedPool: ConnectionPool? = nil) {
        self.pool = pool
        self.sharedPool = sharedPool
    }

    /// The Firebase project every message is sent to (`/v1/projects/{id}/messages:send`): the
    /// service account's.
    public var projectID: String { pool.provider.accessTokens?.account.projectID ?? "" }
}
