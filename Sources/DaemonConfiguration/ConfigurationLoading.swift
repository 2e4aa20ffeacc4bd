import JSONCore

extension ServeConfiguration {
    /// The configuration from the file's bytes (nil: no file), then the `SOKUHO_*` variables, then
    /// the flags (each flag's values in order, as the command line gave them), checked whole.
    /// Every error names where the bad value came from: a JSON path, a variable or a flag.
    public static func load(file: [UInt8]?, environment: [String: String], flags: [String: [String]]) throws(ConfigurationError) -> ServeConfiguration {
        var config = ServeConfiguration()
        // Where each setting's value came from, for the checks that run after all three layers.
        var origins: [String: String] = [:]
        for setting in ServeSetting.all { origins[setting.key] = setting.key }
        if let file {
            let root: JSONValue
            do { root = try JSONParser.parse(file) } catch { throw ConfigurationError(field: "configuration", "is not valid JSON: \(error)") }
            let members = ServeSetting.all.map { setting in
                JSONMember<ServeConfiguration, ConfigurationError>(setting.key) { (value, field, config) throws(ConfigurationError) in try setting.apply(.json(value), field, &config) }
            }
            try JSONObjectFields.read(root, path: "", root: "configuration", what: "the sokuho serve configuration", members: members, into: &config)
        }
        for setting in ServeSetting.all {
            // An empty variable counts as unset, as for every other command's variables.
            guard let text = environment[setting.variable], !text.isEmpty else { continue }
            let values = setting.repeatable ? text.split(separator: ",").map { String($0.filter { $0 != " " }) } : [text]
            try setting.apply(.text(values), setting.variable, &config)
            origins[setting.key] = setting.variable
        }
        for setting in ServeSetting.all {
            guard let values = flags[setting.flag] else { continue }
            try setting.apply(.text(values), setting.flag, &config)
            origins[setting.key] = setting.flag
        }
        try ConfigurationCheck(config, origins: origins).run()
        return config
    }
}
