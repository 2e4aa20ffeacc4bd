// swift-tools-version:6.0
// Sokuho — a statically linked APNs fan-out daemon and CLI. Module map: ../README.md, "Layout".
import PackageDescription

/// Debian packages that provide the C libraries; SwiftPM prints them when a header is missing.
let debian: [SystemPackageProvider] = [.apt(["libmbedtls-dev", "libnghttp2-dev", "liblmdb-dev"])]

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

        // JSON without Foundation: a strict parser and an ordered writer (payloads, CLI output).
        .target(name: "JSONCore"),
        // Crypto primitives and TLS configuration on mbedTLS.
        .target(name: "Crypto", dependencies: ["CMbedTLS"]),
        // HTTP/2 framing on nghttp2.
        .target(name: "HTTP2", dependencies: ["CNghttp2", "Crypto"]),
        // The LMDB token store.
        .target(name: "TokenStore", dependencies: ["CLMDB", "JSONCore"]),
        // The command line: one table-driven parser, one file per sub-command.
        .target(name: "SokuhoCLI", dependencies: ["JSONCore", "Crypto", "HTTP2", "TokenStore"]),
        .executableTarget(name: "sokuho", dependencies: ["SokuhoCLI"]),

        .testTarget(name: "CLibraryTests", dependencies: ["CMbedTLS", "CNghttp2", "CLMDB", "Crypto", "HTTP2", "TokenStore"]),
        .testTarget(name: "SokuhoCLITests", dependencies: ["SokuhoCLI"]),
        .testTarget(name: "TokenStoreTests", dependencies: ["TokenStore", "JSONCore"]),
    ],
    swiftLanguageModes: [.v6]
)
