import Glibc
@testable import Crypto
import Testing

/// The rule of `MbedTLS` (Sources/Crypto/MbedTLS.swift): every int-returning `mbedtls_*` call in
/// Sources/Crypto hands its code to `MbedTLS.check`, `count`, `require` or `ignore` on the same line.
/// Any other call must be to a function that returns no status code, listed here by name.
@Suite struct MbedTLSRuleTests {
    /// mbedTLS 2.28 functions that return void, a pointer, a type or verification flags: nothing to check.
    static let returnsNoStatus: Set<String> = [
        "mbedtls_ctr_drbg_init", "mbedtls_entropy_init", "mbedtls_mpi_init", "mbedtls_mpi_free",
        "mbedtls_pk_init", "mbedtls_pk_free", "mbedtls_pk_get_type", "mbedtls_pk_get_name", "mbedtls_pk_info_from_type",
        "mbedtls_ecp_point_init", "mbedtls_ecp_point_free", "mbedtls_ecp_curve_info_from_grp_id",
        "mbedtls_x509_crt_init", "mbedtls_x509_crt_free",
        "mbedtls_x509write_crt_init", "mbedtls_x509write_crt_free", "mbedtls_x509write_crt_set_version",
        "mbedtls_x509write_crt_set_md_alg", "mbedtls_x509write_crt_set_subject_key", "mbedtls_x509write_crt_set_issuer_key",
        "mbedtls_ssl_config_init", "mbedtls_ssl_config_free", "mbedtls_ssl_conf_min_version", "mbedtls_ssl_conf_rng",
        "mbedtls_ssl_conf_ca_chain", "mbedtls_ssl_conf_authmode",
        "mbedtls_ssl_init", "mbedtls_ssl_free", "mbedtls_ssl_set_verify", "mbedtls_ssl_set_bio",
        "mbedtls_ssl_get_verify_result", "mbedtls_ssl_get_alpn_protocol",
        "mbedtls_net_init", "mbedtls_net_free", "mbedtls_version_get_string", "mbedtls_strerror",
    ]

    static let wrappers = ["MbedTLS.check(", "MbedTLS.count(", "MbedTLS.require(", "MbedTLS.ignore("]

    @Test("Every mbedTLS return code in Sources/Crypto goes through MbedTLS.check, count, require or ignore")
    func everyReturnCodeIsChecked() throws {
        let file = #filePath
        let tests = file[..<file.lastIndex(of: "/")!]
        let root = String(tests[..<tests.lastIndex(of: "/")!].dropLast("/Tests".count))
        let sources = root + "/Sources/Crypto"
        var unchecked: [String] = []
        var callsSeen = 0
        for name in try Self.swiftFiles(in: sources) {
            let text = String(decoding: try FileBytes.read(sources + "/" + name), as: UTF8.self)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let code = line.firstRange(of: "//").map { line[..<$0.lowerBound] } ?? line[...]
                let wrapped = Self.wrappers.contains { code.contains($0) }
                for call in Self.calls(in: code) {
                    callsSeen += 1
                    if !wrapped && !Self.returnsNoStatus.contains(call) { unchecked.append("\(name):\(number + 1): \(call)") }
                }
            }
        }
        #expect(callsSeen > 50, "the scan found too few mbedtls_ calls; is \(sources) right?")
        #expect(unchecked == [], "unchecked mbedTLS return codes:\n\(unchecked.joined(separator: "\n"))")
    }

    /// The names of `mbedtls_…(` calls on a line.
    private static func calls(in line: Substring) -> [String] {
        var out: [String] = []
        var rest = line
        while let start = rest.firstRange(of: "mbedtls_") {
            let tail = rest[start.lowerBound...]
            let name = tail.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            let after = tail.dropFirst(name.count)
            if after.first == "(" { out.append(String(name)) }
            rest = after
        }
        return out
    }

    private static func swiftFiles(in directory: String) throws -> [String] {
        let dir = try #require(opendir(directory), "cannot open \(directory)")
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasSuffix(".swift") { names.append(name) }
        }
        return names.sorted()
    }
}
