import CMbedTLS
import Vocabulary

/// SHA-256 through mbedTLS: used for JWT signing input and for API secret hashes.
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func hash<Bytes: Collection>(_ bytes: Bytes) -> [UInt8] where Bytes.Element == UInt8 {
        var digest = [UInt8](repeating: 0, count: 32)
        let input = Array(bytes)
        input.withUnsafeBufferPointer { inputBuffer in
            digest.withUnsafeMutableBufferPointer { out in
                // Cannot fail on a valid buffer (the software implementation has no error path).
                _ = MbedTLS.require(mbedtls_sha256_ret(inputBuffer.baseAddress, inputBuffer.count, out.baseAddress, 0), "mbedtls_sha256_ret")
            }
        }
        return digest
    }

    /// Lowercase hexadecimal of the digest of `bytes`.
    public static func hexDigest<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        Hex.encode(hash(bytes))
    }
}
