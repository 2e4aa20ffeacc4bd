import Crypto
import Testing

/// RS256 for FCM service accounts, checked against openssl as the independent implementation: keys
/// openssl makes load here, signatures made here verify there (and the other way round), and every
/// key that is not what Google ships is refused saying what it is.
@Suite struct RSASigningKeyTests {
    /// One generated key for the suite: a 2,048-bit key takes up to seconds on a loaded machine.
    static let generated: RSASigningKey = {
        do { return try RSASigningKey.generate(source: "the suite's key") } catch { preconditionFailure("\(error)") }
    }()

    private func openssl(_ arguments: [String], in dir: TemporaryDirectory, expectSuccess: Bool = true) -> Subprocess.Result {
        let result = Subprocess.run(["openssl"] + arguments, in: dir)
        if expectSuccess { #expect(result.succeeded, "openssl \(arguments.joined(separator: " ")): \(result.standardError)") }
        return result
    }

    /// A key as Google ships it: `openssl genpkey` writes PKCS#8 RSA 2048.
    private func opensslKey(in dir: TemporaryDirectory, name: String = "google.p8", bits: Int = 2048) -> String {
        _ = openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(bits)", "-out", dir.path(name)], in: dir)
        return dir.path(name)
    }

    private func load(_ path: String, in dir: TemporaryDirectory) throws(CryptoError) -> RSASigningKey {
        try RSASigningKey(pem: Array(dir.readText(path).utf8), source: path)
    }

    @Test func aPKCS8KeyMadeByOpenSSLLoadsAndHasOpenSSLsPublicKey() throws {
        let dir = TemporaryDirectory()
        let path = opensslKey(in: dir)
        let key = try load(path, in: dir)
        #expect(key.bits == 2048)
        #expect(key.publicKeyPEM == openssl(["pkey", "-in", path, "-pubout"], in: dir).standardOutput)
    }

    @Test func ourSignatureVerifiesWithOpenSSLAndEqualsOpenSSLsOwnSinceV15IsDeterministic() throws {
        let dir = TemporaryDirectory()
        let path = opensslKey(in: dir)
        let key = try load(path, in: dir)
        let message = Array("eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJzb2t1aG8ifQ".utf8)
        let signature = try key.sign(message)
        #expect(signature.count == 256)
        let data = dir.write(bytes: message, to: "input")
        let ours = dir.write(bytes: signature, to: "ours.sig")
        let publicKey = dir.write(key.publicKeyPEM, to: "public.pem")
        let verified = openssl(["dgst", "-sha256", "-verify", publicKey, "-signature", ours, data], in: dir)
        #expect(verified.standardOutput.contains("Verified OK"))

        _ = openssl(["dgst", "-sha256", "-sign", path, "-out", dir.path("theirs.sig"), data], in: dir)
        let theirs = dir.readBytes(dir.path("theirs.sig"))
        #expect(key.verifyingKey.isValidSignature(theirs, of: message))
        #expect(theirs == signature)
    }

    @Test func aSignatureByAnotherKeyOrOfAnotherMessageIsRefusedHereAndByOpenSSL() throws {
        let dir = TemporaryDirectory()
        let other = try load(opensslKey(in: dir), in: dir)
        let message = Array("signing input".utf8)
        let signature = try Self.generated.sign(message)
        #expect(Self.generated.verifyingKey.isValidSignature(signature, of: message))
        #expect(!other.verifyingKey.isValidSignature(signature, of: message))
        #expect(!Self.generated.verifyingKey.isValidSignature(signature, of: Array("signing inpuT".utf8)))
        #expect(!Self.generated.verifyingKey.isValidSignature(Array(signature.dropLast()), of: message))

        let data = dir.write(bytes: message, to: "input")
        let sig = dir.write(bytes: signature, to: "sig")
        let wrongKey = dir.write(other.publicKeyPEM, to: "other.pem")
        let refused = openssl(["dgst", "-sha256", "-verify", wrongKey, "-signature", sig, data], in: dir, expectSuccess: false)
        #expect(!refused.succeeded && !refused.standardOutput.contains("Verified OK"))
    }

    @Test func aGeneratedKeyIsWrittenAsThePKCS8OpenSSLWritesAndLoadsBack() throws {
        let dir = TemporaryDirectory()
        let key = Self.generated
        #expect(key.bits == 2048)
        #expect(key.pkcs8PEM.hasPrefix("-----BEGIN PRIVATE KEY-----\n"))
        let path = dir.write(key.pkcs8PEM, to: "generated.p8")
        // openssl re-encodes the key it read as PKCS#8: byte for byte what we wrote.
        #expect(openssl(["pkey", "-in", path], in: dir).standardOutput == key.pkcs8PEM)
        #expect(openssl(["rsa", "-in", path, "-check", "-noout"], in: dir).standardOutput.contains("RSA key ok"))
        #expect(try RSASigningKey(pem: Array(key.pkcs8PEM.utf8), source: "again").publicKeyDER == key.publicKeyDER)
    }

    @Test func aCompactJWTSignedWithRS256VerifiesWithOpenSSLOverItsFirstTwoSegments() throws {
        let dir = TemporaryDirectory()
        let jwt = try CompactJWT.sign(header: Array(#"{"alg":"RS256","typ":"JWT","kid":"k1"}"#.utf8),
                                      claims: Array(#"{"iss":"a@b","iat":1}"#.utf8), with: Self.generated)
        let parsed = try CompactJWT(parsing: jwt)
        #expect(parsed.signature.count == 256)
        let data = dir.write(bytes: parsed.signingInput, to: "input")
        let sig = dir.write(bytes: parsed.signature, to: "sig")
        let publicKey = dir.write(Self.generated.publicKeyPEM, to: "public.pem")
        #expect(openssl(["dgst", "-sha256", "-verify", publicKey, "-signature", sig, data], in: dir).standardOutput.contains("Verified OK"))
    }

    @Test func everyKeyThatIsNotGooglesLayoutIsRefusedSayingWhatItIs() throws {
        let dir = TemporaryDirectory()
        let pkcs8 = opensslKey(in: dir, bits: 2048)
        _ = openssl(["rsa", "-in", pkcs8, "-traditional", "-out", dir.path("pkcs1.pem")], in: dir)
        _ = openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", dir.path("ec.p8")], in: dir)
        _ = openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", dir.path("ec.pem")], in: dir)
        _ = openssl(["pkcs8", "-topk8", "-v2", "aes256", "-passout", "pass:x", "-in", pkcs8, "-out", dir.path("encrypted.p8")], in: dir)
        let short = opensslKey(in: dir, name: "short.p8", bits: 1024)
        let cases: [(path: String, says: String)] = [
            (dir.path("pkcs1.pem"), "PKCS#1 (BEGIN RSA PRIVATE KEY)"),
            (dir.path("ec.p8"), "EC key in PKCS#8"),
            (dir.path("ec.pem"), "EC key (BEGIN EC PRIVATE KEY)"),
            (dir.path("encrypted.p8"), "encrypted"),
            (short, "1024 bits"),
            (dir.write(Self.generated.publicKeyPEM, to: "public.pem"), "\"PUBLIC KEY\" PEM block"),
            (dir.write("", to: "empty.p8"), "empty"),
            (dir.write("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n", to: "cut.p8"), "does not parse"),
        ]
        for (path, says) in cases {
            do {
                _ = try load(path, in: dir)
                Issue.record("\(path) was accepted")
            } catch {
                guard case let .rsaKeyRefused(source, detail) = error else { Issue.record("\(path): \(error)"); continue }
                #expect(source == path)
                #expect(detail.contains(says), "\(path): \(detail)")
                #expect(error.description.contains("Service accounts"))
            }
        }
        // The conversion the PKCS#1 message suggests yields a key we load.
        _ = openssl(["pkcs8", "-topk8", "-nocrypt", "-in", dir.path("pkcs1.pem"), "-out", dir.path("converted.p8")], in: dir)
        #expect(try load(dir.path("converted.p8"), in: dir).publicKeyPEM == (try load(pkcs8, in: dir)).publicKeyPEM)
    }

    @Test func aVerifyingKeyRefusesAnECPublicKeyNamingIt() throws {
        let ec = try SigningKey.generate().publicKeyPEM
        #expect(throws: CryptoError.rsaPublicKeyRefused(source: "ec.pem", detail: "it is an EC key")) {
            try RSAVerifyingKey(pem: Array(ec.utf8), source: "ec.pem")
        }
    }
}
