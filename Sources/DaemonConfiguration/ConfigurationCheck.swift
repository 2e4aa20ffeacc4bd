#if canImport(Glibc)
import Glibc
#endif
import Crypto
import FCM

/// The checks that need the whole configuration or the file system: at least one app, no app
/// twice, every key file a private ES256 `.p8`, the admin token file private and not empty. Run
/// after all layers, so a flag that fixes a file's value is seen before the file's value is judged.
package struct ConfigurationCheck {
    package let config: ServeConfiguration
    /// The field each setting's final value came from (its JSON key, variable or flag).
    package let origins: [String: String]

    package init(_ config: ServeConfiguration, origins: [String: String]) {
        self.config = config
        self.origins = origins
    }

    package func run() throws(ConfigurationError) {
        let apps = origins["apps"] ?? "apps"
        guard !config.apps.isEmpty else {
            throw ConfigurationError(field: apps, "is required: at least one app (bundleID, teamID, keyID, keyFile, environment), in the --config file or --apps")
        }
        for (index, app) in config.apps.enumerated() {
            let path = "\(apps)[\(index)]"
            if let earlier = config.apps[..<index].firstIndex(where: { $0.bundleID == app.bundleID && $0.environment == app.environment }) {
                throw ConfigurationError(field: path + ".bundleID",
                                         "\(app.bundleID) in \(app.environment.rawValue) is already \(apps)[\(earlier)]; give each app and environment one entry")
            }
            try privateFile(app.keyFile, field: path + ".keyFile", what: "an APNs key lets whoever reads it push to every phone of the team's apps")
            do { _ = try SigningKey(contentsOf: app.keyFile) } catch { throw ConfigurationError(field: path + ".keyFile", error.description) }
            if let caFile = app.caFile {
                do { _ = try TLSConfiguration.client(caFile: caFile) } catch { throw ConfigurationError(field: path + ".caFile", error.description) }
            }
            if let android = app.android { try check(android, path: path + ".android") }
        }
        let token = origins["adminTokenFile"] ?? "adminTokenFile"
        guard !config.adminTokenFile.isEmpty else {
            throw ConfigurationError(field: token, "is required (or --admin-token-file, SOKUHO_ADMIN_TOKEN_FILE): the API never runs without a token. "
                                     + "Make one with: head -c 32 /dev/urandom | base64 > /etc/sokuho/admin.token; chmod 600 /etc/sokuho/admin.token")
        }
        let size = try privateFile(config.adminTokenFile, field: token, what: "the admin token lets whoever reads it send events to every phone")
        guard size > 0 else { throw ConfigurationError(field: token, "\(config.adminTokenFile) is empty; write the token into it") }
        if let passwordFile = config.cluster?.passwordFile {
            let field = (origins["cluster"] ?? "cluster") + ".passwordFile"
            try privateFile(passwordFile, field: field, what: "the Redis password lets whoever reads it change registrations and submit events")
        }
    }

    /// The Android side: the service account private like a `.p8` (its key signs for the whole
    /// Firebase project) and what Google's download holds, its CA readable.
    private func check(_ android: AndroidApp, path: String) throws(ConfigurationError) {
        let field = path + ".serviceAccountFile"
        try privateFile(android.serviceAccountFile, field: field,
                        what: "a service account's key lets whoever reads it send to every Android phone of the Firebase project")
        _ = try Self.serviceAccount(android.serviceAccountFile, field: field)
        if let caFile = android.caFile {
            do { _ = try TLSConfiguration.client(caFile: caFile) } catch { throw ConfigurationError(field: path + ".caFile", error.description) }
        }
    }

    /// Reads and checks a service-account file (the message names the file's member and the fix).
    package static func serviceAccount(_ file: String, field: String) throws(ConfigurationError) -> ServiceAccount {
        let bytes: [UInt8]
        do throws(FileBytes.Failure) { bytes = try FileBytes.read(file, limit: 1 << 20) } catch {
            let why = switch error {
            case .missing: "does not exist"
            case let .failed(text): "cannot be read (\(text))"
            case .tooLarge: "is larger than 1 MiB: not a service account file"
            }
            throw ConfigurationError(field: field, "\(file) \(why)")
        }
        do { return try ServiceAccount(json: bytes) } catch { throw ConfigurationError(field: field, "\(file): \(error)") }
    }

    /// Checks that `path` is a regular file only its owner can access, unless `allowReadableKey`;
    /// returns its size.
    @discardableResult
    private func privateFile(_ path: String, field: String, what: String) throws(ConfigurationError) -> Int {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let reason = errno == ENOENT ? "does not exist" : "cannot be read (\(String(cString: strerror(errno))))"
            throw ConfigurationError(field: field, "\(path) \(reason); fix the path or create the file")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw ConfigurationError(field: field, "\(path) is not a regular file") }
        let mode = info.st_mode & 0o777
        if mode & 0o077 != 0 && !config.allowReadableKey {
            throw ConfigurationError(field: field,
                                     "\(path) is open to group or others (mode 0\(String(mode, radix: 8))), and \(what). Run: chmod 600 \(path) "
                                     + "— or, if access to it is controlled otherwise, set \"allowReadableKey\": true (--allow-readable-key, SOKUHO_ALLOW_READABLE_KEY=1)")
        }
        return Int(info.st_size)
    }
}
