import APNs
import Fanout
import Runtime

/// What the channel routes (`ChannelRoutes.swift`) use of the runtime: the app's kept connection
/// to APNs' channel host, nothing else. (Why a protocol of the API: `EventDesk.swift`.)
package protocol ChannelDesk: AnyObject, Sendable {
    /// The channel client of the app in that environment; nil when this daemon does not serve it.
    func channels(of app: BundleID, _ environment: Environment) -> ChannelClient?
}

extension Service: ChannelDesk {
    package func channels(of app: BundleID, _ environment: Environment) -> ChannelClient? { self.app(app, environment)?.channels }
}
