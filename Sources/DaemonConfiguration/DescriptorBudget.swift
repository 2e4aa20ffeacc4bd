/// About how many descriptors a configuration needs, for the warning at start (and the packaged
/// unit's LimitNOFILE comment): per app its connections, up to one draining beside each after a
/// GOAWAY, one to the channel host and two per loop thread (epoll + eventfd; at most 4 threads);
/// the API's listeners and a margin of client connections; the store, the log, the cluster's
/// Redis links and the reserve the API keeps for refusing when out of them.
extension ServeConfiguration {
    public var descriptorsNeeded: Int {
        let apps = self.apps.reduce(0) { $0 + 2 * $1.connections + 1 + 2 * min(4, $1.connections) + 2 }
        return apps + listen.count + Self.apiClientMargin + 32
    }

    /// API client connections a daemon should be able to hold at once.
    static let apiClientMargin = 256
}
