import Crypto
import Glibc
import Testing

/// Loading provider keys: every layout a real user may have, and every mistake they may make, each
/// with a message that names the file.
@Suite struct SigningKeyTests {
    /// Runs openssl in `dir` and fails the test with its stderr if it fails.
    private func openssl(_ arguments: [String], in dir: TemporaryDirectory) -> String {
        let result = Subprocess.run(["openssl"] + arguments, in: dir)
        #expect(result.succeeded, "openssl \(arguments.joined(separator: " ")): \(result.standardError)")
        return result.standardOutput
    }

    @Test func loadsAppleLayoutP8WithCurveParametersAndPublicKeyInside() throws {
        let key = try SigningKey(contentsOf: Fixtures.appleLayoutKey)
        let expected = TemporaryDirectory().readText(Fixtures.appleLayoutPublicKey)
        #expect(key.publicKeyPEM == expected)
        #expect(key.source == Fixtures.appleLayoutKey)
    }

    @Test(arguments: [
        // genpkey writes PKCS#8 whose inner key omits the curve parameters.
        ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "key.pem"],
        // SEC1 (`BEGIN EC PRIVATE KEY`), as older tools write it.
        ["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "key.pem"],
    ])
    func loadsOpenSSLGeneratedP256KeysAndDerivesTheSamePublicKey(generate: [String]) throws {
        let dir = TemporaryDirectory()
        _ = openssl(generate.map { $0 == "key.pem" ? dir.path("key.pem") : $0 }, in: dir)
        _ = openssl(["pkcs8", "-topk8", "-nocrypt", "-in", dir.path("key.pem"), "-out", dir.path("key.p8")], in: dir)
        let publicPEM = openssl(["pkey", "-in", dir.path("key.pem"), "-pubout"], in: dir)
        for path in [dir.path("key.pem"), dir.path("key.p8")] {
            let key = try SigningKey(contentsOf: path)
            #expect(key.publicKeyPEM == publicPEM, "public key derived from \(path)")
        }
    }

    @Test func loadsABinaryDERKeyToo() throws {
        let dir = TemporaryDirectory()
        _ = openssl(["pkcs8", "-topk8", "-nocrypt", "-in", Fixtures.appleLayoutKey, "-outform", "DER", "-out", dir.path("key.der")], in: dir)
        #expect(try SigningKey(contentsOf: dir.path("key.der")).publicKeyPEM == dir.readText(Fixtures.appleLayoutPublicKey))
    }

    @Test func generatedP8HasApplesLayoutIsPrivateAndRoundTrips() throws {
        let dir = TemporaryDirectory()
        let path = dir.path("AuthKey_GENERATED1.p8")
        let key = try SigningKey.generateP8(at: path)

        var info = stat()
        #expect(stat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)

        let text = dir.readText(path)
        // Apple's .p8 files all begin with these bytes: PKCS#8 v0, id-ecPublicKey/prime256v1, then an
        // ECPrivateKey of 0x77 bytes (parameters and public key inside).
        #expect(text.hasPrefix("-----BEGIN PRIVATE KEY-----\nMIGTAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBHkwdwIBAQQg"))
        let inner = openssl(["asn1parse", "-in", path, "-strparse", "27"], in: dir)
        #expect(inner.contains("cont [ 0 ]") && inner.contains("prime256v1") && inner.contains("cont [ 1 ]"))
        #expect(openssl(["pkey", "-in", path, "-pubout"], in: dir) == key.publicKeyPEM)
        #expect(try SigningKey(contentsOf: path).publicKeyPEM == key.publicKeyPEM)
    }

    @Test func missingFileSaysWhereToGetTheKey() {
        let path = TemporaryDirectory().path("AuthKey_NOPE.p8")
        #expect(throws: CryptoError.keyFileMissing(path: path)) { try SigningKey(contentsOf: path) }
        let message = CryptoError.keyFileMissing(path: path).description
        #expect(message.contains(path) && message.contains("developer.apple.com"))
    }

    @Test func unreadableFileNamesTheReason() {
        let dir = TemporaryDirectory()
        #expect(throws: CryptoError.keyFileUnreadable(path: dir.root, reason: "Is a directory")) {
            try SigningKey(contentsOf: dir.root)
        }
    }

    @Test func encryptedKeysAreRefusedWithTheDecryptCommand() throws {
        let dir = TemporaryDirectory()
        _ = openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", dir.path("plain.pem")], in: dir)
        _ = openssl(["pkcs8", "-topk8", "-v2", "aes256", "-passout", "pass:x", "-in", dir.path("plain.pem"),
                     "-out", dir.path("pkcs8.p8")], in: dir)
        _ = openssl(["ec", "-in", dir.path("plain.pem"), "-aes256", "-passout", "pass:x", "-out", dir.path("legacy.pem")], in: dir)
        for path in [dir.path("pkcs8.p8"), dir.path("legacy.pem")] {
            #expect(throws: CryptoError.keyEncrypted(source: path)) { try SigningKey(contentsOf: path) }
        }
        let message = CryptoError.keyEncrypted(source: dir.path("pkcs8.p8")).description
        #expect(message.contains(dir.path("pkcs8.p8")) && message.contains("openssl pkcs8"))

        // The command the message suggests really yields a key we load.
        _ = openssl(["pkcs8", "-in", dir.path("pkcs8.p8"), "-passin", "pass:x", "-out", dir.path("decrypted.p8")], in: dir)
        #expect(try SigningKey(contentsOf: dir.path("decrypted.p8")).publicKeyPEM
            == openssl(["pkey", "-in", dir.path("plain.pem"), "-pubout"], in: dir))
    }

    @Test func rsaKeysAreRefusedInBothPEMForms() {
        let dir = TemporaryDirectory()
        _ = openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024", "-out", dir.path("rsa.p8")], in: dir)
        _ = openssl(["rsa", "-in", dir.path("rsa.p8"), "-traditional", "-out", dir.path("rsa.pem")], in: dir)
        for path in [dir.path("rsa.p8"), dir.path("rsa.pem")] {
            #expect(throws: CryptoError.keyNotEC(source: path, algorithm: "RSA")) { try SigningKey(contentsOf: path) }
        }
        #expect(CryptoError.keyNotEC(source: "k.p8", algorithm: "RSA").description.contains("P-256"))
    }

    @Test func p384KeyIsRefusedNamingTheCurve() {
        let dir = TemporaryDirectory()
        let path = dir.path("p384.p8")
        _ = openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", path], in: dir)
        #expect(throws: CryptoError.keyWrongCurve(source: path, curve: "secp384r1")) { try SigningKey(contentsOf: path) }
    }

    @Test func garbageEmptyAndNonKeyPEMAreRefused() throws {
        let dir = TemporaryDirectory()
        let garbage = dir.write("this is not a key\n", to: "garbage.p8")
        let empty = dir.write("", to: "empty.p8")
        let publicKey = dir.write(try SigningKey.generate().publicKeyPEM, to: "public.pem")
        let truncated = dir.write("-----BEGIN PRIVATE KEY-----\nMIGTAgEAMBMGByqGSM49AgEGCCqGSM49\n-----END PRIVATE KEY-----\n", to: "cut.p8")
        for path in [garbage, empty, publicKey, truncated] {
            do {
                _ = try SigningKey(contentsOf: path)
                Issue.record("\(path) was accepted")
            } catch {
                guard case let .keyUnrecognized(source, _) = error else {
                    Issue.record("\(path): \(error)")
                    continue
                }
                #expect(source == path)
                #expect(error.description.contains("BEGIN PRIVATE KEY"))
            }
        }
        #expect(throws: CryptoError.keyUnrecognized(source: publicKey, detail: "it holds a \"PUBLIC KEY\" PEM block, not a private key")) {
            try SigningKey(contentsOf: publicKey)
        }
    }

    @Test func pemBytesFromAnEnvironmentVariableLoadWithTheirOwnSourceName() throws {
        let pem = TemporaryDirectory().readText(Fixtures.appleLayoutKey)
        let key = try SigningKey(pem: Array(pem.utf8), source: "the key in SOKUHO_APNS_KEY")
        #expect(key.source == "the key in SOKUHO_APNS_KEY")
        #expect(throws: CryptoError.keyUnrecognized(source: "the key in SOKUHO_APNS_KEY", detail: "it is empty")) {
            try SigningKey(pem: [], source: "the key in SOKUHO_APNS_KEY")
        }
    }
}
