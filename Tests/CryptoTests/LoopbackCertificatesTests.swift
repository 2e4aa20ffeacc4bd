import CMbedTLS
import Crypto
import Testing

/// The simulator's certificate files as both clients will check them: mbedTLS (sokuho itself) and
/// OpenSSL (curl).
@Suite struct LoopbackCertificatesTests {
    /// mbedTLS's verdict on `server.pem` for `hostname` (nil: the chain only) against `ca.pem`: the flags (0 = trusted).
    private func mbedTLSVerificationFlags(_ files: LoopbackCertificates, hostname: String?) -> UInt32 {
        let chain = UnsafeMutablePointer<mbedtls_x509_crt>.allocate(capacity: 1)
        let authority = UnsafeMutablePointer<mbedtls_x509_crt>.allocate(capacity: 1)
        mbedtls_x509_crt_init(chain)
        mbedtls_x509_crt_init(authority)
        defer {
            mbedtls_x509_crt_free(chain)
            mbedtls_x509_crt_free(authority)
            chain.deallocate()
            authority.deallocate()
        }
        #expect(mbedtls_x509_crt_parse_file(chain, files.serverCertificatePath) == 0)
        #expect(mbedtls_x509_crt_parse_file(authority, files.caCertificatePath) == 0)
        var flags: UInt32 = 0
        let rc = mbedtls_x509_crt_verify(chain, authority, nil, hostname, &flags, nil, nil)
        #expect((rc == 0) == (flags == 0))
        return flags
    }

    @Test func mbedTLSTrustsTheServerForLocalhost() throws {
        let dir = TemporaryDirectory()
        let files = try LoopbackCertificates.generate(in: dir.root)
        #expect(mbedTLSVerificationFlags(files, hostname: "localhost") == 0)
    }

    /// mbedTLS 2.28 matches no iPAddress entry, so the addresses are checked the way TLSStream checks
    /// them: the chain with mbedTLS (no host name), the address with `CertificateNames`.
    @Test("The loopback server certificate is trusted for 127.0.0.1 and ::1 through its iPAddress entries, and for no other address",
          arguments: ["127.0.0.1", "::1", "0:0:0:0:0:0:0:1"])
    func loopbackAddressesMatchIPAddressEntries(address: String) throws {
        let dir = TemporaryDirectory()
        let files = try LoopbackCertificates.generate(in: dir.root)
        #expect(mbedTLSVerificationFlags(files, hostname: nil) == 0)
        let names = try serverNames(files)
        #expect(names.contains(ipAddress: address))
        #expect(!names.contains(ipAddress: "127.0.0.2") && !names.contains(ipAddress: "::2") && !names.contains(ipAddress: "localhost"))
        #expect(names.dnsNames == ["localhost"])
        #expect(names.summary == "DNS:localhost, IP:127.0.0.1, IP:::1 (subject CN=localhost, O=Sokuho)")
        #expect(names.issuer == "CN=Sokuho Simulator Test CA, O=Sokuho")
    }

    @Test("A certificate's names are read from its raw subjectAltName: DNS names, IPv4 and IPv6 addresses, in order")
    func certificateNamesReadTheSubjectAltName() throws {
        let dir = TemporaryDirectory()
        let files = try LoopbackCertificates.generate(in: dir.root, extraDNSNames: ["sim.test"], extraIPAddresses: ["192.0.2.7", "2001:db8::5"])
        let names = try serverNames(files)
        #expect(names.dnsNames == ["localhost", "sim.test"])
        #expect(names.ipAddresses.map(CertificateNames.text(ofAddress:)) == ["127.0.0.1", "::1", "192.0.2.7", "2001:db8::5"])
        #expect(names.contains(ipAddress: "2001:0db8:0:0:0:0:0:5"))
        #expect(names.validFrom.hasSuffix("Z") && names.validFrom < names.validUntil)
    }

    private func serverNames(_ files: LoopbackCertificates) throws -> CertificateNames {
        let certificate = UnsafeMutablePointer<mbedtls_x509_crt>.allocate(capacity: 1)
        mbedtls_x509_crt_init(certificate)
        defer { mbedtls_x509_crt_free(certificate); certificate.deallocate() }
        try #require(mbedtls_x509_crt_parse_file(certificate, files.serverCertificatePath) == 0)
        return CertificateNames(certificate)
    }

    @Test func mbedTLSRefusesOtherHostnamesAndOpenSSLAcceptsTheFiles() throws {
        let dir = TemporaryDirectory()
        let files = try LoopbackCertificates.generate(in: dir.root, extraDNSNames: ["sim.test"])
        #expect(mbedTLSVerificationFlags(files, hostname: "sim.test") == 0)
        #expect(mbedTLSVerificationFlags(files, hostname: "api.push.apple.com") & UInt32(MBEDTLS_X509_BADCERT_CN_MISMATCH) != 0)
        let verified = Subprocess.run(["openssl", "verify", "-CAfile", files.caCertificatePath, "-verify_ip", "127.0.0.1",
                                       files.serverCertificatePath], in: dir)
        #expect(verified.standardOutput == files.serverCertificatePath + ": OK\n", "\(verified.standardError)")
        let hostCheck = Subprocess.run(["openssl", "verify", "-CAfile", files.caCertificatePath, "-verify_hostname", "localhost",
                                        files.serverCertificatePath], in: dir)
        #expect(hostCheck.succeeded, "\(hostCheck.standardError)")
        // No CA key is left behind.
        #expect(dir.readText(dir.path("ca-key.pem")).isEmpty)
    }
}
