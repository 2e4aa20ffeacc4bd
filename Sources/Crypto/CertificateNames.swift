import CMbedTLS
import Glibc

/// What a server certificate says about itself, for matching an IP address and for error messages
/// that tell the user what the certificate is for.
///
/// mbedTLS 2.28 keeps only dNSName (and otherName) entries in `subject_alt_names` and never matches
/// an iPAddress entry, so the subjectAltName extension is read here from the certificate's raw v3
/// extensions (RFC 5280 §4.2.1.6).
public struct CertificateNames: Sendable, Equatable {
    /// dNSName entries, as written.
    public var dnsNames: [String] = []
    /// iPAddress entries: 4 (IPv4) or 16 (IPv6) network-order octets.
    public var ipAddresses: [[UInt8]] = []
    /// The subject DN in mbedTLS's form, e.g. "CN=localhost, O=Sokuho".
    public var subject = ""
    /// The issuer DN, e.g. "CN=Sokuho Simulator Test CA, O=Sokuho".
    public var issuer = ""
    /// Validity as "YYYY-MM-DDTHH:MM:SSZ".
    public var validFrom = ""
    public var validUntil = ""

    public init() {}

    /// Reads the names of `certificate` (a parsed mbedTLS certificate; only the first of a chain).
    package init(_ certificate: UnsafePointer<mbedtls_x509_crt>) {
        let crt = certificate.pointee
        subject = Self.distinguishedName(certificate, \.subject)
        issuer = Self.distinguishedName(certificate, \.issuer)
        validFrom = Self.format(crt.valid_from)
        validUntil = Self.format(crt.valid_to)
        guard let extensions = crt.v3_ext.p, crt.v3_ext.len > 0 else { return }
        let bytes = Array(UnsafeBufferPointer(start: extensions, count: crt.v3_ext.len))
        readSubjectAltName(fromExtensions: bytes)
    }

    /// Whether `text` is an IPv4 or IPv6 address literal (which TLS matches against iPAddress
    /// entries, never sends as SNI).
    public static func isIPAddress(_ text: String) -> Bool { CertificateExtensions.ipAddressOctets(text) != nil }

    /// Whether an iPAddress entry equals `address` (IPv4 or IPv6 text).
    public func contains(ipAddress address: String) -> Bool {
        guard let octets = CertificateExtensions.ipAddressOctets(address) else { return false }
        return ipAddresses.contains(octets)
    }

    /// "DNS:localhost, IP:127.0.0.1 (subject CN=localhost, O=Sokuho)": every name a client could
    /// connect by, the way `openssl x509 -text` lists them.
    public var summary: String {
        let names = dnsNames.map { "DNS:" + $0 } + ipAddresses.map { "IP:" + Self.text(ofAddress: $0) }
        let list = names.isEmpty ? "no subjectAltName" : names.joined(separator: ", ")
        return subject.isEmpty ? list : "\(list) (subject \(subject))"
    }

    /// IPv4 or IPv6 octets as text, via inet_ntop.
    public static func text(ofAddress octets: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = octets.count == 4 ? AF_INET : AF_INET6
        guard octets.count == 4 || octets.count == 16, inet_ntop(family, octets, &buffer, socklen_t(buffer.count)) != nil else {
            return octets.map { String($0, radix: 16) }.joined(separator: ":")
        }
        return CStringBuffer.string(buffer)
    }

    /// `Extensions ::= SEQUENCE OF Extension`, `Extension ::= SEQUENCE { extnID, critical DEFAULT
    /// FALSE, extnValue OCTET STRING }`; the subjectAltName value is `SEQUENCE OF GeneralName`.
    private mutating func readSubjectAltName(fromExtensions bytes: [UInt8]) {
        var outer = DERReader(bytes[...])
        guard let list = outer.read(tag: DER.sequenceTag) else { return }
        var extensions = DERReader(list)
        while let element = extensions.read(tag: DER.sequenceTag) {
            var fields = DERReader(element)
            guard let oid = fields.read(tag: DER.objectIdentifierTag), Array(oid) == CertificateExtensions.subjectAltNameOID else { continue }
            _ = fields.read(tag: 0x01)  // critical
            guard let value = fields.read(tag: DER.octetStringTag) else { return }
            var wrapper = DERReader(value)
            guard let generalNames = wrapper.read(tag: DER.sequenceTag) else { return }
            var names = DERReader(generalNames)
            while let (tag, contents) = names.readAny() {
                switch tag {
                case CertificateExtensions.dnsNameTag: dnsNames.append(String(decoding: contents, as: UTF8.self))
                case CertificateExtensions.ipAddressTag where contents.count == 4 || contents.count == 16: ipAddresses.append(Array(contents))
                default: break  // email, URI, directory names: nothing a TLS client connects by
                }
            }
            return
        }
    }

    private static func distinguishedName(_ certificate: UnsafePointer<mbedtls_x509_crt>,
                                          _ field: KeyPath<mbedtls_x509_crt, mbedtls_x509_name>) -> String {
        let offset = MemoryLayout<mbedtls_x509_crt>.offset(of: field)!
        let name = (UnsafeRawPointer(certificate) + offset).assumingMemoryBound(to: mbedtls_x509_name.self)
        var buffer = [CChar](repeating: 0, count: 512)
        // A name too long for the buffer reads as none: it only serves messages.
        guard (try? MbedTLS.count(mbedtls_x509_dn_gets(&buffer, buffer.count, name))) != nil else { return "" }
        return CStringBuffer.string(buffer)
    }

    private static func format(_ time: mbedtls_x509_time) -> String {
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return pad(time.year, 4) + "-" + pad(time.mon, 2) + "-" + pad(time.day, 2) + "T"
            + pad(time.hour, 2) + ":" + pad(time.min, 2) + ":" + pad(time.sec, 2) + "Z"
    }
}

/// Reads DER TLV elements front to back; any malformation ends the reading (returns nil), since
/// these names only serve matching and messages after mbedTLS has parsed the certificate.
struct DERReader {
    private var rest: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { rest = bytes }

    /// The contents of the next element if its tag is `tag`; otherwise nil and nothing is consumed.
    mutating func read(tag: UInt8) -> ArraySlice<UInt8>? {
        guard rest.first == tag else { return nil }
        return readAny()?.contents
    }

    /// The next element's tag and contents.
    mutating func readAny() -> (tag: UInt8, contents: ArraySlice<UInt8>)? {
        var index = rest.startIndex
        guard index < rest.endIndex else { return nil }
        let tag = rest[index]
        index += 1
        guard index < rest.endIndex else { return nil }
        var length = Int(rest[index])
        index += 1
        if length & 0x80 != 0 {
            let count = length & 0x7f
            guard count >= 1 && count <= 3, rest.endIndex - index >= count else { return nil }
            length = 0
            for _ in 0..<count {
                length = length << 8 | Int(rest[index])
                index += 1
            }
        }
        guard rest.endIndex - index >= length else { return nil }
        let contents = rest[index..<(index + length)]
        rest = rest[(index + length)...]
        return (tag, contents)
    }
}
