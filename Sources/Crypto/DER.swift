/// Just enough DER writing for the structures mbedTLS 2.28 cannot write itself: the PKCS#8 wrappers
/// of a `.p8` key and of a service account's RSA key, and the subjectAltName / extendedKeyUsage certificate extensions.
/// Values are built front to back from their already-encoded children.
enum DER {
    static let sequenceTag: UInt8 = 0x30
    static let integerTag: UInt8 = 0x02
    static let octetStringTag: UInt8 = 0x04
    static let objectIdentifierTag: UInt8 = 0x06

    /// id-ecPublicKey (1.2.840.10045.2.1), content octets.
    static let ecPublicKeyOID: [UInt8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]
    /// prime256v1 / secp256r1 (1.2.840.10045.3.1.7), content octets.
    static let prime256v1OID: [UInt8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07]
    /// rsaEncryption (1.2.840.113549.1.1.1), content octets.
    static let rsaEncryptionOID: [UInt8] = [0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01]
    /// NULL, whole: the parameters of rsaEncryption (RFC 8017 A.1).
    static let null: [UInt8] = [0x05, 0x00]

    /// Tag, definite length, contents.
    static func element(_ tag: UInt8, _ contents: [UInt8]) -> [UInt8] {
        var out = [tag]
        let count = contents.count
        if count < 0x80 {
            out.append(UInt8(count))
        } else {
            var lengthBytes = [UInt8]()
            var rest = count
            while rest > 0 {
                lengthBytes.insert(UInt8(rest & 0xff), at: 0)
                rest >>= 8
            }
            out.append(0x80 | UInt8(lengthBytes.count))
            out.append(contentsOf: lengthBytes)
        }
        out.append(contentsOf: contents)
        return out
    }

    static func sequence(_ children: [[UInt8]]) -> [UInt8] { element(sequenceTag, children.flatMap { $0 }) }

    static func objectIdentifier(_ contentOctets: [UInt8]) -> [UInt8] { element(objectIdentifierTag, contentOctets) }

    /// PKCS#8 PrivateKeyInfo (RFC 5208) for an EC P-256 key: version 0, AlgorithmIdentifier
    /// {id-ecPublicKey, prime256v1}, and the SEC1 ECPrivateKey as an OCTET STRING. With the inner key
    /// that mbedTLS writes (parameters [0] and public key [1] included) this is byte for byte the
    /// layout of the .p8 files Apple hands out.
    static func pkcs8PrivateKeyInfo(wrappingSEC1 ecPrivateKey: [UInt8]) -> [UInt8] {
        sequence([
            element(integerTag, [0]),
            sequence([objectIdentifier(ecPublicKeyOID), objectIdentifier(prime256v1OID)]),
            element(octetStringTag, ecPrivateKey),
        ])
    }

    /// PKCS#8 PrivateKeyInfo for an RSA key: version 0, AlgorithmIdentifier {rsaEncryption, NULL},
    /// and the PKCS#1 RSAPrivateKey as an OCTET STRING — what Google's service-account files hold
    /// (`BEGIN PRIVATE KEY`) and what `openssl pkcs8 -topk8 -nocrypt` writes, byte for byte.
    static func pkcs8PrivateKeyInfo(wrappingPKCS1 rsaPrivateKey: [UInt8]) -> [UInt8] {
        sequence([
            element(integerTag, [0]),
            sequence([objectIdentifier(rsaEncryptionOID), null]),
            element(octetStringTag, rsaPrivateKey),
        ])
    }
}
