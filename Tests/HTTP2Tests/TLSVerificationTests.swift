#if canImport(Glibc)
import Glibc
#endif
import Crypto
@testable import HTTP2
import HTTP2TestSupport
import IO
import Testing
import Vocabulary

/// Server-certificate verification over real loopback handshakes: IP-address names are matched with
/// iPAddress entries, and every refusal names its cause and what to pass.
@Suite(.serialized) struct TLSVerificationTests {
    /// A CA and a certificate made by `issue`, served on 127.0.0.1 while `body` runs with the port.
    private func withServer(issue: (CertificateAuthority) throws -> IssuedCertificate,
                            _ body: (_ port: Int, _ caFile: String) throws -> Void) throws {
        let dir = temporaryDirectory("sokuho-tls")
        let authority = try CertificateAuthority.generate()
        try authority.identity.write(certificateTo: dir + "/ca.pem", keyTo: dir + "/ca-key.pem")
        try issue(authority).write(certificateTo: dir + "/server.pem", keyTo: dir + "/server-key.pem")
        let tls = try TLSConfiguration.server(certificateFile: dir + "/server.pem", keyFile: dir + "/server-key.pem")
        try HTTP2Tests.withServer(tls: tls, handler: EchoHandler(), name: "tls-test-server") { server in try body(server.port, dir + "/ca.pem") }
    }

    private func request(port: Int, caFile: String?, serverName: String? = nil) throws -> Result<[ClientResult], TransportError> {
        var options = ClientConnectionOptions(host: "127.0.0.1", port: port, tls: try TLSConfiguration.client(caFile: caFile))
        options.serverName = serverName
        return OneShotClient.perform([ClientRequest(method: "GET", path: "/", headers: [])], options: options, authorization: nil)
    }

    private func failure(_ result: Result<[ClientResult], TransportError>) -> String? {
        if case let .failure(error) = result { return error.description }
        return nil
    }

    @Test("Connecting to 127.0.0.1 without a server name succeeds when the certificate has the iPAddress 127.0.0.1 and no DNS name for it")
    func ipAddressEntryMatches() throws {
        try withServer(issue: { try $0.issueServerCertificate(commonName: "sim", dnsNames: ["sim.test"], ipAddresses: ["127.0.0.1"]) }) { port, ca in
            let results = try request(port: port, caFile: ca).get()
            guard case .response(200, _, _) = results[0] else { Issue.record("\(results[0])"); return }
        }
    }

    @Test("A certificate without the address connected to is refused with a message naming the names it has and --server-name")
    func missingAddressNamesWhatTheCertificateIsFor() throws {
        try withServer(issue: { try $0.issueServerCertificate(dnsNames: ["localhost"], ipAddresses: ["127.0.0.2", "::1"]) }) { port, ca in
            let message = try #require(failure(try request(port: port, caFile: ca)))
            #expect(message.contains("certificate verification failed"))
            #expect(message.contains("the certificate is for DNS:localhost, IP:127.0.0.2, IP:::1 (subject CN=localhost, O=Sokuho), not 127.0.0.1"),
                    "\(message)")
            #expect(message.contains("pass --server-name NAME or connect by that name"))
            #expect(!message.contains("--ca-file"), "the CA was right: \(message)")
            // The same certificate by one of its DNS names: the chain itself was fine.
            let results = try request(port: port, caFile: ca, serverName: "localhost").get()
            guard case .response(200, _, _) = results[0] else { Issue.record("\(results[0])"); return }
        }
    }

    @Test("A DNS server name the certificate is not for is refused naming the certificate's names")
    func wrongDNSNameNamesWhatTheCertificateIsFor() throws {
        try withServer(issue: { try $0.issueServerCertificate() }) { port, ca in
            let message = try #require(failure(try request(port: port, caFile: ca, serverName: "api.push.apple.com")))
            #expect(message.contains("the certificate is for DNS:localhost, IP:127.0.0.1, IP:::1 (subject CN=localhost, O=Sokuho), not api.push.apple.com"),
                    "\(message)")
        }
    }

    @Test("A certificate from an unknown CA is refused naming its issuer, the CAs trusted and --ca-file")
    func unknownCANamesCAFile() throws {
        try withServer(issue: { try $0.issueServerCertificate() }) { port, _ in
            let message = try #require(failure(try request(port: port, caFile: nil)))
            #expect(message.contains("issued by CN=Sokuho Simulator Test CA, O=Sokuho"), "\(message)")
            #expect(message.contains("the system CA bundle /etc/ssl/certs/ca-certificates.crt"))
            #expect(message.contains("pass the issuing CA with --ca-file"))
            #expect(!message.contains("--server-name"), "127.0.0.1 is in the certificate: \(message)")
        }
    }

    @Test("An expired certificate is refused saying when it expired")
    func expiredCertificateSaysSo() throws {
        let longAgo = WallClock.seconds() - 900 * 86_400
        try withServer(issue: { try $0.issueServerCertificate(validityDays: 30, now: longAgo) }) { port, ca in
            let message = try #require(failure(try request(port: port, caFile: ca)))
            #expect(message.contains("the server's certificate expired at " + ProviderTokenClockDiagnosis.iso8601(longAgo + 30 * 86_400)),
                    "\(message)")
        }
    }
}
