#if canImport(Glibc)
import Glibc
#endif
import Crypto
import FCM
import Vocabulary

extension SimulatorCertificates {
    /// The simulator's service account for a server at `host:port`: the key in `fcmKey`, its key ID
    /// (the first 40 hex digits of the public key's SHA-256, the length of Google's), and
    /// `token_uri` pointing at the simulator itself.
    func fcmAccount(host: String, port: Int) throws(SimulatorError) -> (account: ServiceAccount, key: RSASigningKey) {
        do {
            let key = try RSASigningKey(contentsOf: fcmKey)
            // The certificate names loopback only: a wildcard listener is reached there.
            let reachable = host == "0.0.0.0" ? "127.0.0.1" : host == "::" || host.contains(":") ? "[::1]" : host
            let account = try ServiceAccount(projectID: Self.fcmProjectID, privateKeyID: String(SHA256.hexDigest(key.publicKeyDER).prefix(40)),
                                             privateKeyPEM: key.pkcs8PEM, clientEmail: Self.fcmClientEmail,
                                             tokenURI: "https://\(reachable):\(port)/token")
            return (account, key)
        } catch let error as CryptoError {
            throw .key("\(fcmKey): \(error)")
        } catch {
            throw .certificates("the simulator's FCM service account: \(error)")
        }
    }

    /// Writes `account` in Google's layout to `fcmServiceAccount(port:)`, mode 0600 (it holds the key).
    func writeFCMServiceAccount(_ account: ServiceAccount, port: Int) throws(SimulatorError) -> String {
        let path = fcmServiceAccount(port: port)
        let bytes = account.googleLayoutJSON(clientID: "100000000000000000001")
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .certificates("cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw .certificates("cannot write \(path): \(String(cString: strerror(errno)))") }
        return path
    }
}
