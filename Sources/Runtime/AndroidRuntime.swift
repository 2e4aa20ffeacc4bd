import APNs
import DaemonConfiguration
import Crypto
import FCM
import Sender

/// An app's Android side at run time: the service account, its access tokens (refreshed before
/// they run out, without stalling sends) and the warm FCM pool every event of the app shares.
package final class AndroidRuntime: Sendable {
    package let android: AndroidApp
    package let account: ServiceAccount
    package let tokens: FCMAccessTokenSource
    package let configuration: PoolConfiguration
    package let pool: ConnectionPool

    package init(_ android: AndroidApp, keepalive: Duration) throws(ServiceError) {
        self.android = android
        var account: ServiceAccount
        do { account = try ConfigurationCheck.serviceAccount(android.serviceAccountFile, field: "serviceAccountFile") } catch {
            throw ServiceError(error.description)
        }
        if let host = android.tokenHost {
            // The simulator's token endpoint instead of the file's: the same path, another host.
            let path = account.tokenURI.drop { $0 != "/" }.dropFirst(2).drop { $0 != "/" }
            do {
                account = try ServiceAccount(projectID: account.projectID, privateKeyID: account.privateKeyID, privateKeyPEM: account.privateKeyPEM,
                                             clientEmail: account.clientEmail, tokenURI: "https://\(host)\(path.isEmpty ? "/token" : String(path))")
            } catch { throw ServiceError("tokenHost: \(error)") }
        }
        self.account = account
        let tls: TLSConfiguration
        do { tls = try TLSConfiguration.client(caFile: android.caFile) } catch { throw ServiceError("caFile: \(error.description)") }
        do { tokens = try FCMAccessTokenSource(account: account, tls: tls) } catch {
            throw ServiceError("serviceAccountFile \(android.serviceAccountFile): \(error)")
        }
        let host = android.fcmHost ?? Endpoint(host: FCMEndpoint.host, port: 443)
        var pool = PoolConfiguration.fcm(host: host.host, port: host.port, tls: tls, tokens: tokens)
        pool.connections = android.connections
        // Per node: a cluster's nodes each send up to this, so give each its share of the quota.
        pool.messagesPerMinute = android.messagesPerMinute
        pool.keepWarm = true
        pool.keepalive = keepalive
        // As APNs': an unreachable FCM at boot is retried with back-off, never a permanent halt.
        pool.failFastAfterAttempts = .max
        configuration = pool
        do { self.pool = try ConnectionPool(configuration: pool) } catch {
            throw ServiceError("cannot start its FCM connection pool: \(error)")
        }
    }

    /// "com.example.eew (project my-app-1a2b3)": how messages name it.
    package var name: String { "\(android.package) (project \(account.projectID))" }
}
