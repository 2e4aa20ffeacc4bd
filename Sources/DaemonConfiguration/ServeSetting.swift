/// One setting of `sokuho serve`: its member in the configuration file, its flag and its `SOKUHO_*`
/// variable, and how a value is read into the configuration. `all` is the one table: the file's
/// members, the command's options, their help and the README's override table all follow it.
///
/// Precedence: flag > variable > file > default.
public struct ServeSetting: Sendable {
    /// The member of the configuration file's top-level object, e.g. "storePath".
    public let key: String
    /// The flag, e.g. "--store".
    public let flag: String
    /// The variable, e.g. "SOKUHO_STORE".
    public let variable: String
    /// The flag's value placeholder ("DIR"), or nil for a flag that takes none (it means true).
    public let placeholder: String?
    public let help: String
    /// A flag that may be given several times; its variable then takes a comma-separated list.
    public let repeatable: Bool
    package let apply: @Sendable (SettingInput, String, inout ServeConfiguration) throws(ConfigurationError) -> Void

    package init(_ key: String, flag: String, variable: String, placeholder: String?, help: String, repeatable: Bool = false,
         apply: @escaping @Sendable (SettingInput, String, inout ServeConfiguration) throws(ConfigurationError) -> Void) {
        self.key = key
        self.flag = flag
        self.variable = variable
        self.placeholder = placeholder
        self.help = help
        self.repeatable = repeatable
        self.apply = apply
    }

    public static let all: [ServeSetting] = [
        ServeSetting("apps", flag: "--apps", variable: "SOKUHO_APPS", placeholder: "JSON",
                     help: "the apps as a JSON array, replacing the file's (bundleID, teamID, keyID, keyFile, environment, …)") {
            (input, field, config) throws(ConfigurationError) in config.apps = try AppReading.apps(input, field: field)
        },
        ServeSetting("listen", flag: "--listen", variable: "SOKUHO_LISTEN", placeholder: "HOST:PORT",
                     help: "an address for the API, replacing the file's list (default 127.0.0.1:8080; variable: comma-separated)", repeatable: true) {
            (input, field, config) throws(ConfigurationError) in config.listen = try SettingValue.endpoints(input, field: field)
        },
        ServeSetting("storePath", flag: "--store", variable: "SOKUHO_STORE", placeholder: "DIR",
                     help: "the token store directory, an absolute path (default /var/lib/sokuho)") {
            (input, field, config) throws(ConfigurationError) in config.storePath = try SettingValue.absolutePath(input, field: field)
        },
        ServeSetting("adminTokenFile", flag: "--admin-token-file", variable: "SOKUHO_ADMIN_TOKEN_FILE", placeholder: "FILE",
                     help: "the file holding the API's admin bearer token (required, mode 0600)") {
            (input, field, config) throws(ConfigurationError) in config.adminTokenFile = try SettingValue.path(input, field: field)
        },
        ServeSetting("keepaliveSeconds", flag: "--keepalive", variable: "SOKUHO_KEEPALIVE", placeholder: "SECONDS",
                     help: "PING an idle APNs connection this often, so NATs keep it (1–3600, default 300)") {
            (input, field, config) throws(ConfigurationError) in config.keepalive = try SettingValue.seconds(input, field: field, in: 1...3600)
        },
        ServeSetting("credentialCheckSeconds", flag: "--credential-check", variable: "SOKUHO_CREDENTIAL_CHECK", placeholder: "SECONDS",
                     help: "check each app's key with APNs this often (60–86400, default 3600)") {
            (input, field, config) throws(ConfigurationError) in config.credentialCheckInterval = try SettingValue.seconds(input, field: field, in: 60...86_400)
        },
        ServeSetting("startLimit", flag: "--start-limit", variable: "SOKUHO_START_LIMIT", placeholder: "N",
                     help: "push-to-start budget per phone within the start window, as 'sokuho fanout' (1–127, default 8; none or 0: no limit)") {
            (input, field, config) throws(ConfigurationError) in config.startLimit = try SettingValue.limit(input, field: field, in: 1...127)
        },
        ServeSetting("startWindowSeconds", flag: "--start-window", variable: "SOKUHO_START_WINDOW", placeholder: "SECONDS",
                     help: "the window of the start budget (1–604800, default 3600)") {
            (input, field, config) throws(ConfigurationError) in config.startWindow = try SettingValue.seconds(input, field: field, in: 1...7 * 86_400)
        },
        ServeSetting("rateLimit", flag: "--rate-limit", variable: "SOKUHO_RATE_LIMIT", placeholder: "N[/BURST]",
                     help: "API requests per second per client address, and the burst (default 20/40; off: no limit)") {
            (input, field, config) throws(ConfigurationError) in config.rateLimit = try SettingValue.rateLimit(input, field: field)
        },
        ServeSetting("maxBodyBytes", flag: "--max-body", variable: "SOKUHO_MAX_BODY", placeholder: "BYTES",
                     help: "the largest API request body (1024–67108864, default 1048576)") {
            (input, field, config) throws(ConfigurationError) in config.maxBodyBytes = try SettingValue.integer(input, field: field, in: 1024...64 << 20)
        },
        ServeSetting("statusPage", flag: "--status-page", variable: "SOKUHO_STATUS_PAGE", placeholder: "on|off",
                     help: "serve the status page (default on)") {
            (input, field, config) throws(ConfigurationError) in config.statusPage = try SettingValue.bool(input, field: field)
        },
        ServeSetting("logFormat", flag: "--log-format", variable: "SOKUHO_LOG_FORMAT", placeholder: "text|json",
                     help: "the log lines on stderr: text (default), or json, one object per line with level, message and fields, for log shippers") {
            (input, field, config) throws(ConfigurationError) in config.logFormat = try SettingValue.logFormat(input, field: field)
        },
        ServeSetting("allowReadableKey", flag: "--allow-readable-key", variable: "SOKUHO_ALLOW_READABLE_KEY", placeholder: nil,
                     help: "accept a .p8 key or admin token file that group or others can read (refused by default)") {
            (input, field, config) throws(ConfigurationError) in config.allowReadableKey = try SettingValue.bool(input, field: field)
        },
        ServeSetting("standby", flag: "--standby", variable: "SOKUHO_STANDBY", placeholder: nil,
                     help: "run as a warm standby: connections up, nothing sent until promoted (sokuho serve --promote, or SIGUSR1)") {
            (input, field, config) throws(ConfigurationError) in config.standby = try SettingValue.bool(input, field: field)
        },
        ServeSetting("standbyBackupFile", flag: "--standby-backup-file", variable: "SOKUHO_STANDBY_BACKUP_FILE", placeholder: "FILE",
                     help: "with standby: the primary's shipped backup (a data.mdb, or its directory), applied when it changes (checked every 30 s and on SIGHUP)") {
            (input, field, config) throws(ConfigurationError) in
            if case .json(.null) = input { config.standbyBackupFile = nil; return }
            config.standbyBackupFile = try SettingValue.absolutePath(input, field: field)
        },
        ServeSetting("cluster", flag: "--cluster", variable: "SOKUHO_CLUSTER", placeholder: "JSON",
                     help: "share registrations and events with other nodes through Valkey/Redis: {\"redis\": \"HOST:PORT\", \"node\", \"shards\", \"claimSeconds\", \"passwordFile\", \"registrationStreamLength\"} (default: none, this node alone)") {
            (input, field, config) throws(ConfigurationError) in config.cluster = try ClusterReading.cluster(input, field: field)
        },
    ]
}
