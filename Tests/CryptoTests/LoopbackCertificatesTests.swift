import CMbedTLS
import Crypto
import Testing

/// The simulator's certificate files as both clients will check them: mbedTLS (sokuho itself) and
/// OpenSSL (curl).
@Suite struct LoopbackCertificatesTests {
    /// mbedTLS's verdict on `server.pem` for `hostname` against `ca.pem`: the flags (0 = trusted).
    private func mbedTLSVerificationFlags(_ files: LoopbackCertificates, hostname: String) -> UInt32 {
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

    @Test(arguments: ["localhost", "127.0.0.1", "::1"])
    func mbedTLSTrustsTheServerForEachLoopbackName(hostname: String) throws {
        let dir = TemporaryDirectory()
        let files = try LoopbackCertificates.generate(in: dir.root)
        #expect(mbedTLSVerificationFlags(files, hostname: hostname) == 0)
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
