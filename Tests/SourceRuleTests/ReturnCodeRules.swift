#if canImport(Glibc)
import Glibc
#endif
import Testing

/// One C library's rule: every call of its functions (names starting with one of `prefixes`) in one
/// source folder hands the status it
/// returns to the module's checked wrapper — on its line, or within the statement's next
/// `followingLines` lines. Functions that return no status code are listed by name.
struct ReturnCodeRule: Sendable, CustomTestStringConvertible {
    let library: String
    let folder: String
    let prefixes: [String]
    let wrappers: [String]
    let returnsNoStatus: Set<String>
    /// C structs built with their initialiser (not calls), and callback setters.
    let notCalls: Set<String>
    let ignoredPrefixes: [String]
    let excludedFiles: Set<String>
    let followingLines: Int
    let minimumCalls: Int

    var testDescription: String { "\(library) in \(folder)" }

    /// `file:line: function` for each call whose status is not checked.
    func uncheckedCalls(root: String) throws -> (calls: Int, unchecked: [String]) {
        let directory = root + "/" + folder
        var unchecked: [String] = []
        var calls = 0
        for name in try SourceTree.swiftFiles(in: directory) where !excludedFiles.contains(name) {
            let lines = SourceTree.code(try SourceTree.read(directory + "/" + name))
            for (number, code) in lines.enumerated() {
                for call in functions(in: code) where !notCalls.contains(call) && !ignoredPrefixes.contains(where: { call.hasPrefix($0) }) {
                    calls += 1
                    let statement = lines[number..<min(lines.count, number + 1 + followingLines)]
                    let checked = statement.contains { line in wrappers.contains { line.contains($0) } }
                    if !checked && !returnsNoStatus.contains(call) { unchecked.append("\(name):\(number + 1): \(call)") }
                }
            }
        }
        return (calls, unchecked)
    }

    /// The names of `prefix…(` calls on a line, for every prefix.
    private func functions(in line: Substring) -> [String] { prefixes.flatMap { functions(in: line, prefix: $0) } }

    private func functions(in line: Substring, prefix: String) -> [String] {
        var out: [String] = []
        var rest = line
        while let start = rest.firstRange(of: prefix) {
            let tail = rest[start.lowerBound...]
            let name = tail.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            let after = tail.dropFirst(name.count)
            if after.first == "(" { out.append(String(name)) }
            rest = after
        }
        return out
    }
}

/// The rules of the checked wrappers, as tests: `MbedTLS` (Sources/Crypto/MbedTLS.swift),
/// `Nghttp2` (Sources/HTTP2/Nghttp2Check.swift), `LibEvent` (Sources/HTTPAPI/LibEvent.swift) and `Hiredis`
/// (Sources/Redis/Hiredis.swift). A new unchecked call fails here.
@Suite struct ReturnCodeRuleTests {
    static let rules = [
        ReturnCodeRule(
            library: "mbedTLS", folder: "Sources/Crypto", prefixes: ["mbedtls_"],
            wrappers: ["MbedTLS.check(", "MbedTLS.count(", "MbedTLS.require(", "MbedTLS.ignore("],
            // mbedTLS 2.28 functions that return void, a pointer, a type or verification flags.
            returnsNoStatus: [
                "mbedtls_ctr_drbg_init", "mbedtls_entropy_init", "mbedtls_mpi_init", "mbedtls_mpi_free",
                "mbedtls_pk_init", "mbedtls_pk_free", "mbedtls_pk_get_type", "mbedtls_pk_get_name", "mbedtls_pk_info_from_type", "mbedtls_pk_get_bitlen",
                "mbedtls_ecp_point_init", "mbedtls_ecp_point_free", "mbedtls_ecp_curve_info_from_grp_id",
                "mbedtls_x509_crt_init", "mbedtls_x509_crt_free",
                "mbedtls_x509write_crt_init", "mbedtls_x509write_crt_free", "mbedtls_x509write_crt_set_version",
                "mbedtls_x509write_crt_set_md_alg", "mbedtls_x509write_crt_set_subject_key", "mbedtls_x509write_crt_set_issuer_key",
                "mbedtls_ssl_config_init", "mbedtls_ssl_config_free", "mbedtls_ssl_conf_min_version", "mbedtls_ssl_conf_rng",
                "mbedtls_ssl_conf_ca_chain", "mbedtls_ssl_conf_authmode",
                "mbedtls_ssl_init", "mbedtls_ssl_free", "mbedtls_ssl_set_verify", "mbedtls_ssl_set_bio",
                "mbedtls_ssl_get_verify_result", "mbedtls_ssl_get_alpn_protocol",
                "mbedtls_net_init", "mbedtls_net_free", "mbedtls_version_get_string", "mbedtls_strerror",
            ],
            notCalls: [], ignoredPrefixes: [], excludedFiles: [], followingLines: 0, minimumCalls: 50),
        ReturnCodeRule(
            library: "nghttp2", folder: "Sources/HTTP2", prefixes: ["nghttp2_"],
            wrappers: ["Nghttp2.check(", "precondition("],
            // Return no status; nghttp2_submit_request returns a stream id (or an error) its callers test.
            returnsNoStatus: [
                "nghttp2_session_del", "nghttp2_session_set_user_data", "nghttp2_session_want_read", "nghttp2_session_want_write",
                "nghttp2_session_get_remote_settings", "nghttp2_session_get_stream_user_data", "nghttp2_version", "nghttp2_strerror",
                "nghttp2_submit_request",
            ],
            notCalls: ["nghttp2_nv", "nghttp2_settings_entry", "nghttp2_data_provider", "nghttp2_mem"],
            ignoredPrefixes: ["nghttp2_session_callbacks_set_"], excludedFiles: ["Nghttp2Check.swift"],
            followingLines: 2, minimumCalls: 15),
        ReturnCodeRule(
            library: "libevent", folder: "Sources/HTTPAPI", prefixes: ["event_", "evhttp_", "evbuffer_"],
            wrappers: ["LibEvent.check(", "LibEvent.count(", "LibEvent.require(", "LibEvent.mustSucceed("],
            // libevent 2.1 functions that return void, a length, an enum, a string or an optional part.
            returnsNoStatus: [
                "evhttp_set_max_body_size", "evhttp_set_max_headers_size", "evhttp_set_timeout_tv", "evhttp_set_allowed_methods",
                "evhttp_set_gencb", "evhttp_free", "event_free", "event_base_free", "evhttp_send_reply", "evhttp_send_error",
                "evhttp_clear_headers", "evhttp_connection_get_peer", "evbuffer_get_length", "evhttp_request_get_command",
                "evhttp_uri_get_path", "evhttp_uri_get_query", "event_get_version",
                "evhttp_set_bevcb", "evhttp_connection_set_closecb", "evhttp_request_get_connection",
                "evhttp_connection_get_bufferevent", "evbuffer_free",
                // bufferevent_getcb and bufferevent_free return nothing ("event_" matches inside the name).
                "event_getcb", "event_free",
                // evhttp_connection_free returns nothing; bufferevent_getfd the descriptor, -1 when
                // there is none, which its caller checks.
                "evhttp_connection_free", "event_getfd",
            ],
            notCalls: [], ignoredPrefixes: [], excludedFiles: [], followingLines: 1, minimumCalls: 25),
        ReturnCodeRule(
            library: "hiredis", folder: "Sources/Redis", prefixes: ["redis"],
            wrappers: ["Hiredis.check(", "Hiredis.context(", "Hiredis.reply("],
            // redisFree returns nothing; freeReplyObject (no "redis" prefix) is called in Hiredis.reply only.
            returnsNoStatus: ["redisFree"],
            notCalls: [], ignoredPrefixes: [], excludedFiles: [], followingLines: 0, minimumCalls: 8),
    ]

    @Test("Every C library return code goes through the module's checked wrapper", arguments: rules)
    func everyReturnCodeIsChecked(_ rule: ReturnCodeRule) throws {
        let (calls, unchecked) = try rule.uncheckedCalls(root: SourceTree.root)
        #expect(calls >= rule.minimumCalls, "the scan found only \(calls) \(rule.prefixes) calls; is \(rule.folder) right?")
        #expect(unchecked == [], "unchecked \(rule.library) return codes:\n\(unchecked.joined(separator: "\n"))")
    }
}
