import CMbedTLS
@testable import Crypto
import Testing

/// A TLS configuration is shared by every connection on every loop thread, so the mbedTLS key state
/// that is otherwise written lazily must exist before the first handshake.
@Suite struct TLSConfigurationTests {
    @Test func aFreshlyParsedKeyLacksTheGeneratorTableUntilPrecomputed() throws {
        let dir = TemporaryDirectory()
        let files = try LoopbackCertificates.generate(in: dir.root)
        let key = PKContext()
        #expect(mbedtls_pk_parse_keyfile(key.pointer, files.serverKeyPath, nil) == 0)
        #expect(!GeneratorTable.isReady(key.pointer))
        #expect(throws: Never.self) { try GeneratorTable.precompute(key.pointer) }
        #expect(GeneratorTable.isReady(key.pointer))
    }

    @Test func serverAndClientConfigurationsShareOnlyPrecomputedECKeys() throws {
        let dir = TemporaryDirectory()
        let files = try LoopbackCertificates.generate(in: dir.root)
        let server = try TLSConfiguration.server(certificateFile: files.serverCertificatePath, keyFile: files.serverKeyPath)
        #expect(server.keysWithoutGeneratorTable == 0)
        let client = try TLSConfiguration.client(caFile: files.caCertificatePath)
        #expect(client.keysWithoutGeneratorTable == 0)
    }

    @Test("A missing --ca-file says it does not exist (not mbedTLS's 'Read/write of file failed'), naming the file and the fix")
    func missingCAFileSaysSo() throws {
        let dir = TemporaryDirectory()
        let path = dir.path("absent.pem")
        #expect {
            _ = try TLSConfiguration.client(caFile: path)
        } throws: { error in
            "\(error)" == "--ca-file \(path) does not exist; give the PEM file of the CA the server's certificate was issued by, "
                + "e.g. the simulator's <cert-dir>/ca.pem"
        }
    }

    @Test("A --ca-file holding no certificate fails with the same wording")
    func garbageCAFileKeepsItsMessage() throws {
        let dir = TemporaryDirectory()
        let path = dir.write("not a certificate\n", to: "garbage.pem")
        #expect {
            _ = try TLSConfiguration.client(caFile: path)
        } throws: { error in
            let message = "\(error)"
            return message.hasPrefix("--ca-file \(path): no PEM certificate could be read (")
                && message.hasSuffix("); pass the CA the server's certificate was issued by, e.g. the simulator's <cert-dir>/ca.pem")
        }
    }

    @Test("A CA bundle with one unparsable certificate among good ones is used: only a file with none fails")
    func bundleWithOneBadCertificateIsAccepted() throws {
        let dir = TemporaryDirectory()
        let files = try LoopbackCertificates.generate(in: dir.root)
        let broken = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
        let bundle = dir.write(broken + dir.readText(files.caCertificatePath), to: "bundle.pem")
        let client = try TLSConfiguration.client(caFile: bundle)
        #expect(client.keysWithoutGeneratorTable == 0)
    }

    @Test("A server key that does not parse fails naming the file and what it must be")
    func badServerKeyKeepsItsMessage() throws {
        let dir = TemporaryDirectory()
        let files = try LoopbackCertificates.generate(in: dir.root)
        let key = dir.write("not a key\n", to: "key.pem")
        #expect {
            _ = try TLSConfiguration.server(certificateFile: files.serverCertificatePath, keyFile: key)
        } throws: { error in
            let message = "\(error)"
            return message.hasPrefix("key \(key) could not be read (") && message.hasSuffix("); it must be an unencrypted PEM private key")
        }
    }
}
