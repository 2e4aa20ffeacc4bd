import Vocabulary

/// The files a simulator needs to serve TLS on loopback, and a client needs to trust it.
public struct LoopbackCertificates: Sendable {
    /// The CA certificate to give clients (`--ca-file`, `curl --cacert`).
    public let caCertificatePath: String
    /// The server certificate (SAN: the DNS names and addresses it was issued for).
    public let serverCertificatePath: String
    /// The server's private key (PKCS#8 PEM, mode 0600).
    public let serverKeyPath: String

    /// Generates a throwaway CA and a server certificate for `localhost`, 127.0.0.1 and ::1 (plus
    /// any extra names) and writes `ca.pem`, `server.pem` and `server-key.pem` into `directory`.
    /// The CA's key is not written: nothing else can ever be signed by it.
    public static func generate(in directory: String, extraDNSNames: [String] = [], extraIPAddresses: [String] = [],
                                now: Int64 = WallClock.seconds()) throws(CryptoError) -> LoopbackCertificates {
        let files = LoopbackCertificates(caCertificatePath: directory + "/ca.pem", serverCertificatePath: directory + "/server.pem",
                                         serverKeyPath: directory + "/server-key.pem")
        let authority = try CertificateAuthority.generate(now: now)
        let server = try authority.issueServerCertificate(dnsNames: ["localhost"] + extraDNSNames,
                                                          ipAddresses: ["127.0.0.1", "::1"] + extraIPAddresses, now: now)
        try server.write(certificateTo: files.serverCertificatePath, keyTo: files.serverKeyPath)
        try FileBytes.writePEM(authority.certificatePEM, to: files.caCertificatePath, mode: 0o644)
        return files
    }
}
