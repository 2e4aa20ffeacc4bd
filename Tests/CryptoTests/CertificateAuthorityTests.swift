import Crypto
import Glibc
import Testing

/// The simulator's CA and server certificate, as OpenSSL (an independent X.509 implementation) sees them.
@Suite struct CertificateAuthorityTests {
    @Test func opensslAcceptsTheServerCertificateForLoopbackNames() throws {
        let dir = TemporaryDirectory()
        let authority = try CertificateAuthority.generate()
        try authority.identity.write(certificateTo: dir.path("ca.pem"), keyTo: dir.path("ca-key.pem"))
        let server = try authority.issueServerCertificate()
        try server.write(certificateTo: dir.path("server.pem"), keyTo: dir.path("server-key.pem"))

        let verified = Subprocess.run(["openssl", "verify", "-purpose", "sslserver", "-CAfile", dir.path("ca.pem"), dir.path("server.pem")], in: dir)
        #expect(verified.standardOutput == dir.path("server.pem") + ": OK\n", "\(verified.standardError)")

        let text = Subprocess.run(["openssl", "x509", "-noout", "-text", "-in", dir.path("server.pem")], in: dir).standardOutput
        // Addresses only as iPAddress entries: sokuho now matches those itself (no dNSName "127.0.0.1").
        #expect(text.contains("X509v3 Subject Alternative Name: \n                DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1\n"), "\(text)")
        #expect(text.contains("TLS Web Server Authentication"))
        #expect(text.contains("Issuer: CN = Sokuho Simulator Test CA, O = Sokuho"))
        #expect(text.contains("ecdsa-with-SHA256") && text.contains("prime256v1"))

        let caText = Subprocess.run(["openssl", "x509", "-noout", "-text", "-in", dir.path("ca.pem")], in: dir).standardOutput
        #expect(caText.contains("CA:TRUE"))

        // The key file belongs to the certificate, and only its owner can read it.
        let certificateKey = Subprocess.run(["openssl", "x509", "-noout", "-pubkey", "-in", dir.path("server.pem")], in: dir).standardOutput
        #expect(certificateKey == server.key.publicKeyPEM)
        #expect(try SigningKey(contentsOf: dir.path("server-key.pem")).publicKeyPEM == certificateKey)
        var info = stat()
        #expect(stat(dir.path("server-key.pem"), &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test func opensslRefusesTheServerCertificateAgainstAnotherCA() throws {
        let dir = TemporaryDirectory()
        let server = try CertificateAuthority.generate().issueServerCertificate()
        let stranger = try CertificateAuthority.generate()
        _ = dir.write(server.certificatePEM, to: "server.pem")
        _ = dir.write(stranger.certificatePEM, to: "other-ca.pem")
        #expect(!Subprocess.run(["openssl", "verify", "-CAfile", dir.path("other-ca.pem"), dir.path("server.pem")], in: dir).succeeded)
    }

    @Test func customNamesAndAddressesAppearInSubjectAltName() throws {
        let dir = TemporaryDirectory()
        let server = try CertificateAuthority.generate(commonName: "Test, Inc. CA")
            .issueServerCertificate(commonName: "sim.test", dnsNames: ["sim.test", "*.sim.test"], ipAddresses: ["10.1.2.3", "fe80::1"])
        _ = dir.write(server.certificatePEM, to: "server.pem")
        let text = Subprocess.run(["openssl", "x509", "-noout", "-text", "-in", dir.path("server.pem")], in: dir).standardOutput
        #expect(text.contains("DNS:sim.test, DNS:*.sim.test, IP Address:10.1.2.3, IP Address:FE80:0:0:0:0:0:0:1\n"), "\(text)")
        #expect(text.contains("Subject: CN = sim.test, O = Sokuho"))
    }

    @Test func badNamesAreRefusedBeforeAnythingIsWritten() throws {
        let authority = try CertificateAuthority.generate()
        #expect(throws: CryptoError.invalidIPAddress("127.0.0.256")) {
            try authority.issueServerCertificate(ipAddresses: ["127.0.0.256"])
        }
        for name in ["", "bad_name", "-x.test", "a..b", "exa mple.com"] {
            #expect(throws: CryptoError.invalidDNSName(name)) { try authority.issueServerCertificate(dnsNames: [name]) }
        }
    }
}
