// swift-tools-version:6.0
// Sokuho — a statically linked APNs fan-out daemon and CLI. Module map: ../README.md, "Layout".
import PackageDescription

/// Debian packages that provide the C libraries; SwiftPM prints them when a header is missing.
let debian: [SystemPackageProvider] = [.apt(["libmbedtls-dev", "libnghttp2-dev", "liblmdb-dev", "libevent-dev", "libhiredis-dev"])]

let package = Package(
    name: "Sokuho",
    products: [
        .executable(name: "sokuho", targets: ["sokuho"]),
    ],
    targets: [
        // C libraries from Debian, linked from their static archives (see each module.modulemap).
        .systemLibrary(name: "CMbedTLS", path: "Sources/CMbedTLS", providers: debian),
        .systemLibrary(name: "CNghttp2", path: "Sources/CNghttp2", providers: debian),
        .systemLibrary(name: "CLMDB", path: "Sources/CLMDB", providers: debian),
        .systemLibrary(name: "CLibEvent", path: "Sources/CLibEvent", providers: debian),
        .systemLibrary(name: "CHiredis", path: "Sources/CHiredis", providers: debian),
        .systemLibrary(name: "CSystem", path: "Sources/CSystem"),

        // Below every other module: the words they all spell the same way — `Hex` (the one digit
        // table; JSON's \u00XX, tokens, digests, %XX), `WallClock` (the one CLOCK_REALTIME read),
        // `UUIDText` (the one UUID layout) and `DeviceToken` (the one token type, with every token
        // length bound: APNs', the store's, the simulator's, FCM's — every token user depends on
        // it, so each is written once). Its own target because JSONCore and APNs need hex and
        // Crypto needs the clock, and none of them may depend on IO, HTTP or each other's concerns.
        .target(name: "Vocabulary"),
        // JSON without Foundation: a strict parser, an ordered writer (payloads, CLI output) and the
        // one strict object reader (`JSONObjectFields`: unknown or repeated members refused by name).
        .target(name: "JSONCore", dependencies: ["Vocabulary"]),
        // The APNs protocol as plain values: requests, Live Activity payloads, responses. No I/O, no C.
        .target(name: "APNs", dependencies: ["JSONCore", "Vocabulary"]),
        // The FCM HTTP v1 protocol as plain values, like APNs: the service-account file, the OAuth
        // assertion's header and claims and the token exchange, message templates (prefix + token +
        // suffix), responses and their one action. No I/O, no C: the RS256 signature is Crypto's.
        .target(name: "FCM", dependencies: ["JSONCore", "Vocabulary"]),
        // Crypto on mbedTLS: SHA-256, .p8 keys, ES256 provider tokens and their generations, the
        // simulator's certificate authority, TLS configuration. JSONCore parses JWT headers and claims.
        .target(name: "Crypto", dependencies: ["CMbedTLS", "JSONCore", "Vocabulary"]),
        // The runtime floor: an epoll loop per thread with a timer heap, checked system calls (the one
        // errno wrapper), threads and the one mutex/condition type, owned file descriptors, name
        // resolution off the loop, Happy Eyeballs connects. No TLS, no HTTP.
        .target(name: "IO", dependencies: ["CSystem", "Vocabulary"]),
        // HTTP/2 over TLS: a sans-I/O session on nghttp2 (bytes in, events out) shared by the client
        // and server connections. Generic: nothing about APNs.
        .target(name: "HTTP2", dependencies: ["IO", "CNghttp2", "CSystem", "Crypto"]),
        // HTTP/1.1 for the daemon's API on libevent's evhttp: requests and responses as plain values,
        // a server with its loop on its own thread. Every libevent pointer stays inside. No routes.
        .target(name: "HTTPAPI", dependencies: ["CLibEvent", "CSystem", "IO", "JSONCore"]),
        // The LMDB token store.
        // Vocabulary: `DeviceToken.storedAPNsByteCount`, the store's bound on a token. IO: the checked
        // system calls (`Syscall`) and `ConditionLock` of its writer thread and queue.
        .target(name: "TokenStore", dependencies: ["CLMDB", "JSONCore", "APNs", "IO", "Vocabulary"]),
        // The command line: one table-driven parser, one file per sub-command.
        .target(name: "SokuhoCLI", dependencies: ["JSONCore", "APNs", "FCM", "Crypto", "IO", "HTTP2", "HTTPAPI", "Sender", "Simulator", "TokenStore", "Fanout", "Daemon", "DaemonConfiguration", "Runtime", "Vocabulary"]),
        // `sokuho serve` in parts, each one job (README "Layout"):
        // its configuration — one JSON file, flags and SOKUHO_* variables on top, checked whole at start;
        .target(name: "DaemonConfiguration", dependencies: ["APNs", "Crypto", "FCM", "JSONCore"]),
        // this node of a cluster — its Redis link and health, shard leases, registration replication;
        .target(name: "Cluster", dependencies: ["DaemonConfiguration", "IO", "JSONCore", "Redis", "TokenStore"]),
        // the runtime — the store, one warm AppRuntime per app, the event queue, reload, standby,
        // credential checks, metrics, the cluster's events and shard workers; nothing about HTTP;
        .target(name: "Runtime", dependencies: ["APNs", "Cluster", "Crypto", "DaemonConfiguration", "FCM", "Fanout", "IO",
                                                "JSONCore", "Redis", "Sender", "TokenStore", "Vocabulary"]),
        // and the daemon itself: the HTTP API (routes, status page — the only place HTTP status codes
        // live) put together with the runtime. openapi.json describes the API; SimulatorTests/OpenAPITests
        // checks the server against it.
        .target(name: "Daemon", dependencies: ["APNs", "Crypto", "DaemonConfiguration", "Fanout", "HTTPAPI", "IO", "JSONCore", "Runtime",
                                               "TokenStore", "Vocabulary"],
                exclude: ["openapi.json"]),
        // Live Activity events from the token store: scan → starts per group → pool → outcomes →
        // store writes (checkpoints, pruning), plus the event's broadcasts and channels.
        .target(name: "Fanout", dependencies: ["APNs", "Crypto", "FCM", "IO", "JSONCore", "Sender", "TokenStore", "Vocabulary"]),
        // The sending engine: connection pool, push jobs, retries, outcomes.
        .target(name: "Sender", dependencies: ["APNs", "FCM", "IO", "HTTP2", "Crypto", "Vocabulary"]),
        // The APNs look-alike for tests, demo and benchmarks; it plays FCM too (same port, by path).
        .target(name: "Simulator", dependencies: ["APNs", "FCM", "IO", "HTTP2", "Crypto", "JSONCore", "Vocabulary"]),
        // The Redis/Valkey client the cluster runs on (issue 15): a small typed client on hiredis —
        // stream commands, consumer groups, leases with fencing tokens. Every hiredis pointer stays inside.
        .target(name: "Redis", dependencies: ["CHiredis"]),
        .executableTarget(name: "sokuho", dependencies: ["SokuhoCLI"]),

        .testTarget(name: "CLibraryTests", dependencies: ["CMbedTLS", "CNghttp2", "CLMDB", "Crypto", "HTTP2", "TokenStore"]),
        .testTarget(name: "SokuhoCLITests", dependencies: ["SokuhoCLI", "Daemon", "DaemonConfiguration", "Runtime", "APNs", "Crypto", "FCM", "Vocabulary"]),
        // A raw HTTP/2 client (no retries, no APNs rules) for the transport and simulator tests.
        .target(name: "HTTP2TestSupport", dependencies: ["HTTP2", "IO"], path: "Tests/HTTP2TestSupport"),
        .testTarget(name: "HTTP2Tests", dependencies: ["IO", "HTTP2", "HTTP2TestSupport", "Crypto", "CNghttp2", "Vocabulary"]),
        // End to end: the simulator on loopback, driven by the CLI in-process, raw HTTP/2 and curl.
        .testTarget(name: "SimulatorTests", dependencies: ["Simulator", "SokuhoCLI", "APNs", "FCM", "Crypto", "IO", "HTTP2", "HTTP2TestSupport", "JSONCore", "Fanout", "TokenStore", "RedisTestSupport", "Redis", "Vocabulary"],
                    // The bad-input corpus: test data read by BadInputTests from the source tree, not resources.
                    exclude: ["BadInputs"]),
        // The API server against a real HTTP/1.1 client: curl.
        .testTarget(name: "HTTPAPITests", dependencies: ["HTTPAPI"]),
        .testTarget(name: "APNsTests", dependencies: ["APNs", "JSONCore", "Vocabulary"]),
        .testTarget(name: "VocabularyTests", dependencies: ["Vocabulary"]),
        .testTarget(name: "IOTests", dependencies: ["IO", "Vocabulary"]),
        .testTarget(name: "FCMTests", dependencies: ["FCM", "JSONCore", "Vocabulary"]),
        .testTarget(name: "SenderTests", dependencies: ["Sender", "Simulator", "IO", "HTTP2", "Crypto", "APNs", "FCM", "Vocabulary"]),
        // Keys, JWTs and certificates checked against independent implementations (openssl, Python).
        .testTarget(name: "CryptoTests", dependencies: ["Crypto", "CMbedTLS"], exclude: ["Fixtures"]),
        .testTarget(name: "TokenStoreTests", dependencies: ["TokenStore", "JSONCore", "IO"]),
        // The cluster client against a real redis-server the tests start on loopback.
        .testTarget(name: "RedisTests", dependencies: ["Redis", "Cluster", "DaemonConfiguration", "APNs", "IO", "RedisTestSupport"]),
        // A redis-server of the test's own on a free loopback port (RedisTests, the cluster's end-to-end tests).
        .target(name: "RedisTestSupport", dependencies: ["Redis", "IO"], path: "Tests/RedisTestSupport"),
        // Rules checked by reading the sources: the C return codes go through the checked wrappers,
        // and the vocabulary (hex, wall clock, UUIDs, locks, errno checks, strict JSON objects) is defined once.
        .testTarget(name: "SourceRuleTests"),
        // Fuzzing: the targets (parsers of untrusted input), the libFuzzer driver that Toolchain/fuzz
        // builds with sanitizers (here it only replays files), and the replay of Tests/FuzzCorpus.
        .target(name: "FuzzTargets", dependencies: ["APNs", "FCM", "Daemon", "DaemonConfiguration", "Runtime", "Fanout", "HTTP2", "HTTPAPI", "JSONCore", "TokenStore"], path: "Tests/FuzzTargets"),
        .executableTarget(name: "sokuho-fuzz", dependencies: ["FuzzTargets"], path: "Tests/Fuzz"),
        .testTarget(name: "FuzzTests", dependencies: ["FuzzTargets"]),
    ],
    swiftLanguageModes: [.v6]
)
