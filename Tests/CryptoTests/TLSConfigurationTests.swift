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
}
