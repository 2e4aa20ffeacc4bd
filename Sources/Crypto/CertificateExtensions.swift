import Glibc

/// The X.509 extensions mbedTLS 2.28 has no writer for, as DER for
/// `mbedtls_x509write_crt_set_extension`: subjectAltName (RFC 5280 §4.2.1.6) and extendedKeyUsage.
enum CertificateExtensions {
    /// id-ce-subjectAltName (2.5.29.17), content octets.
    static let subjectAltNameOID: [UInt8] = [0x55, 0x1d, 0x11]
    /// id-ce-extKeyUsage (2.5.29.37), content octets.
    static let extendedKeyUsageOID: [UInt8] = [0x55, 0x1d, 0x25]
    /// id-kp-serverAuth (1.3.6.1.5.5.7.3.1), content octets.
    static let serverAuthOID: [UInt8] = [0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x01]

    /// GeneralName tags (context-specific, implicit): dNSName [2] IA5String, iPAddress [7] OCTET STRING.
    static let dnsNameTag: UInt8 = 0x82
    static let ipAddressTag: UInt8 = 0x87

    /// `SEQUENCE OF GeneralName` with each DNS name as a dNSName, then each IP address as an
    /// iPAddress (4 or 16 octets). IP addresses are not repeated as dNSName text: sokuho matches
    /// iPAddress entries itself (`CertificateNames`), and text addresses in dNSName are invalid.
    static func subjectAltName(dnsNames: [String], ipAddresses: [String]) throws(CryptoError) -> [UInt8] {
        var names = [[UInt8]]()
        for name in dnsNames {
            guard isDNSName(name) else { throw .invalidDNSName(name) }
            names.append(DER.element(dnsNameTag, Array(name.utf8)))
        }
        for address in ipAddresses {
            guard let octets = ipAddressOctets(address) else { throw .invalidIPAddress(address) }
            names.append(DER.element(ipAddressTag, octets))
        }
        return DER.sequence(names)
    }

    /// `SEQUENCE { id-kp-serverAuth }`.
    static func serverAuthExtendedKeyUsage() -> [UInt8] {
        DER.sequence([DER.objectIdentifier(serverAuthOID)])
    }

    /// The network-order octets of IPv4 or IPv6 text, via inet_pton.
    static func ipAddressOctets(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// LDH labels separated by dots, an optional leading `*.`, at most 253 bytes.
    static func isDNSName(_ name: String) -> Bool {
        var rest = Substring(name)
        if rest.hasPrefix("*.") { rest = rest.dropFirst(2) }
        guard !rest.isEmpty, name.utf8.count <= 253 else { return false }
        return rest.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { label in
            !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                && label.utf8.allSatisfy { byte in
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                        || byte == UInt8(ascii: "-")
                }
        }
    }
}
