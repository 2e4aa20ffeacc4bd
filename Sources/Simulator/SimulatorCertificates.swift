#if canImport(Glibc)
import Glibc
#endif
import Crypto

/// The simulator's CA, server certificate, a test provider key and an FCM service account's RSA
/// key, kept in one directory so that clients can pass `--ca-file DIR/ca.pem` and
/// `--key DIR/AuthKey_<KEYID>.p8` (and, for FCM, the service-account file a running simulator
/// writes there, `fcmServiceAccount(port:)`).
public struct SimulatorCertificates: Sendable {
    public let directory: String
    public var ca: String { directory + "/ca.pem" }
    public var certificate: String { directory + "/server.pem" }
    public var key: String { directory + "/server-key.pem" }
    /// The test provider key the simulator trusts by default.
    public var providerKey: String { directory + "/AuthKey_\(SimulatorCertificates.keyID).p8" }

    /// The identity of the generated test provider key.
    public static let teamID = "SOKUHOTEAM"
    public static let keyID = "SIMKEY0001"

    /// The FCM service account's RSA key (PKCS#8, as in Google's file), generated once per directory.
    public var fcmKey: String { directory + "/fcm-service-account-key.pem" }
    /// The service-account file of the simulator listening on `port`: its `token_uri` names the port,
    /// so each running simulator writes its own, and simulators sharing a directory (tests) never
    /// overwrite each other's.
    public func fcmServiceAccount(port: Int) -> String { directory + "/fcm-service-account-\(port).json" }
    /// The simulated Firebase project and its service account's e-mail.
    public static let fcmProjectID = "sokuho-simulator"
    public static let fcmClientEmail = "firebase-adminsdk-sim@sokuho-simulator.iam.gserviceaccount.com"

    /// Uses the files in `directory` when they exist, else generates a CA, a server certificate for
    /// localhost/127.0.0.1/::1 and a test provider key there (creating the directory).
    public static func prepare(directory: String) throws(SimulatorError) -> SimulatorCertificates {
        let result = SimulatorCertificates(directory: directory)
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw .certificates("cannot create \(directory): \(String(cString: strerror(errno)))")
        }
        do {
            if access(result.ca, R_OK) != 0 || access(result.certificate, R_OK) != 0 || access(result.key, R_OK) != 0 {
                _ = try LoopbackCertificates.generate(in: directory)
            }
            if access(result.providerKey, R_OK) != 0 {
                _ = try SigningKey.generateP8(at: result.providerKey)
            }
            if access(result.fcmKey, R_OK) != 0 {
                try RSASigningKey.generate(source: result.fcmKey).writePKCS8(to: result.fcmKey)
            }
        } catch {
            throw .certificates("\(error) (directory \(directory))")
        }
        return result
    }

    /// The simulator's default trust: the test provider key in this directory.
    public func trustedTestKey() throws(SimulatorError) -> ProviderTokenVerifier.TrustedKey {
        do {
            let key = try SigningKey(contentsOf: providerKey)
            return ProviderTokenVerifier.TrustedKey(keyID: Self.keyID, teamID: Self.teamID, key: key.verifyingKey)
        } catch {
            throw .key("\(providerKey): \(error)")
        }
    }
}
