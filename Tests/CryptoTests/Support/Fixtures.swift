import Crypto
import Synchronization

/// Paths of committed fixtures and helpers shared by the Crypto tests.
enum Fixtures {
    /// Tests/CryptoTests/Fixtures, found from this source file's path (no bundle resources needed).
    static let directory: String = {
        let file = #filePath
        let support = file[..<file.lastIndex(of: "/")!]
        let tests = support[..<support.lastIndex(of: "/")!]
        return tests + "/Fixtures"
    }()

    /// A throwaway key in the exact layout of an Apple `AuthKey_<KEYID>.p8`: PKCS#8 whose inner
    /// ECPrivateKey carries the curve parameters [0] and the public key [1] (generated once with
    /// openssl and committed; it signs nothing real).
    static let appleLayoutKey = directory + "/AuthKey_TESTKEY001.test.p8"
    /// Its public key, as `openssl pkey -pubout` printed it.
    static let appleLayoutPublicKey = directory + "/AuthKey_TESTKEY001.test.pub.pem"

    static let keyID = "TESTKEY001"
    static let teamID = "TEAM123456"
}

/// A clock the test moves by hand, readable from any thread.
final class ManualClock: Sendable {
    private let seconds: Atomic<Int64>

    init(_ start: Int64 = 1_800_000_000) { seconds = Atomic(start) }

    var now: Int64 { seconds.load(ordering: .sequentiallyConsistent) }
    func set(_ value: Int64) { seconds.store(value, ordering: .sequentiallyConsistent) }
    func advance(minutes: Int64, seconds extra: Int64 = 0) { seconds.add(minutes * 60 + extra, ordering: .sequentiallyConsistent) }
    var closure: @Sendable () -> Int64 { { self.now } }
}

/// Python `cryptography` as the independent ES256 implementation.
enum PythonJWT {
    /// Verifies argv[1] (a JWT) against the PEM public key in argv[2], converting the raw r||s to DER
    /// with cryptography's own encode_dss_signature; prints the header and claims as JSON.
    static let verifier = """
    import sys, base64, json
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    def b64(s):
        assert '=' not in s, 'padding in a JWT segment'
        return base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))
    h, c, s = sys.argv[1].split('.')
    sig = b64(s)
    assert len(sig) == 64, 'signature is %d bytes, not 64' % len(sig)
    key = serialization.load_pem_public_key(open(sys.argv[2], 'rb').read())
    der = encode_dss_signature(int.from_bytes(sig[:32], 'big'), int.from_bytes(sig[32:], 'big'))
    key.verify(der, (h + '.' + c).encode(), ec.ECDSA(hashes.SHA256()))
    print(b64(h).decode())
    print(b64(c).decode())
    """

    /// Signs a provider token with the PEM private key argv[1], kid argv[2], iss argv[3], iat argv[4].
    static let signer = """
    import sys, base64
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
    def b64(b): return base64.urlsafe_b64encode(b).rstrip(b'=').decode()
    key = serialization.load_pem_private_key(open(sys.argv[1], 'rb').read(), password=None)
    h = b64(('{"alg":"ES256","kid":"%s"}' % sys.argv[2]).encode())
    c = b64(('{"iss":"%s","iat":%s}' % (sys.argv[3], sys.argv[4])).encode())
    r, s = decode_dss_signature(key.sign((h + '.' + c).encode(), ec.ECDSA(hashes.SHA256())))
    print(h + '.' + c + '.' + b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big')))
    """
}
