import APNs
import JSONCore

extension ServeConfiguration {
    /// One screen for `sokuho serve --check-config` (and the daemon's start-up log): what will run,
    /// with every file by its path — never key or token material.
    public var summary: String {
        var lines = ["configuration ok: \(apps.count) app\(apps.count == 1 ? "" : "s"), API on \(listen.map(\.description).joined(separator: ", "))"]
        for app in apps {
            var line = "app           \(app.bundleID) (\(app.environment.rawValue)) team \(app.teamID) key \(app.keyID) \(app.keyFile), "
                + "\(app.connections) connections × \(app.streams) streams"
            if let host = app.host { line += ", host \(host)" }
            if let manageHost = app.manageHost { line += ", manage host \(manageHost)" }
            if let caFile = app.caFile { line += ", CA \(caFile)" }
            lines.append(line)
            if let android = app.android {
                var line = "  android     \(android.package) service account \(android.serviceAccountFile), \(android.connections) connections, "
                    + "\(android.messagesPerMinute) messages/min"
                if let host = android.fcmHost { line += ", FCM host \(host)" }
                if let host = android.tokenHost { line += ", token host \(host)" }
                if let caFile = android.caFile { line += ", CA \(caFile)" }
                lines.append(line)
            }
        }
        lines.append("store         \(storePath)")
        lines.append("admin token   \(adminTokenFile)")
        lines.append("keepalive     PING idle APNs connections every \(Self.seconds(keepalive)) s")
        lines.append("credentials   checked every \(Self.seconds(credentialCheckInterval)) s")
        lines.append("start budget  " + (startLimit.map { "\($0) starts per phone per \(Self.seconds(startWindow)) s" } ?? "no limit"))
        lines.append("rate limit    " + (rateLimit.map { "\($0.perSecond) requests/s per client address, burst \($0.burst)" } ?? "none"))
        lines.append("max body      \(maxBodyBytes) bytes")
        lines.append("status page   \(statusPage ? "on" : "off")")
        lines.append("log format    \(logFormat.rawValue)")
        lines.append("file modes    " + (allowReadableKey ? "keys and token readable by group or others allowed" : "keys and token must be private (no access for group or others: 0400 or 0600)"))
        if standby {
            lines.append("standby       yes: nothing is sent until promoted" + (standbyBackupFile.map { "; follows the backup at \($0)" } ?? ""))
        }
        if let cluster {
            lines.append("cluster       node \(cluster.node) through \(cluster.redis)\(cluster.passwordFile.map { " (password \($0))" } ?? ""), "
                         + "\(cluster.shards) shards per event, claimed after \(Self.seconds(cluster.claimAfter)) s, "
                         + "registration stream ~\(cluster.registrationStreamLength) entries")
        }
        return lines.joined(separator: "\n")
    }

    /// The configuration in the file's own format, defaults filled in: it loads back as the same.
    public var json: String {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("apps")
        writer.beginArray()
        for app in apps {
            writer.beginObject()
            writer.key("bundleID"); writer.string(app.bundleID.text)
            writer.key("teamID"); writer.string(app.teamID)
            writer.key("keyID"); writer.string(app.keyID)
            writer.key("keyFile"); writer.string(app.keyFile)
            writer.key("environment"); writer.string(app.environment.rawValue)
            writer.key("connections"); writer.int(app.connections)
            writer.key("streams"); writer.int(app.streams)
            if let host = app.host { writer.key("host"); writer.string(host.description) }
            if let manageHost = app.manageHost { writer.key("manageHost"); writer.string(manageHost.description) }
            if let caFile = app.caFile { writer.key("caFile"); writer.string(caFile) }
            if let android = app.android {
                writer.key("android"); writer.beginObject()
                writer.key("package"); writer.string(android.package)
                writer.key("serviceAccountFile"); writer.string(android.serviceAccountFile)
                if let host = android.fcmHost { writer.key("fcmHost"); writer.string(host.description) }
                if let host = android.tokenHost { writer.key("tokenHost"); writer.string(host.description) }
                if let caFile = android.caFile { writer.key("caFile"); writer.string(caFile) }
                writer.key("connections"); writer.int(android.connections)
                writer.key("messagesPerMinute"); writer.int(android.messagesPerMinute)
                writer.endObject()
            }
            writer.endObject()
        }
        writer.endArray()
        writer.key("listen")
        writer.beginArray()
        for address in listen { writer.string(address.description) }
        writer.endArray()
        writer.key("storePath"); writer.string(storePath)
        writer.key("adminTokenFile"); writer.string(adminTokenFile)
        writer.key("keepaliveSeconds"); writer.int(Self.seconds(keepalive))
        writer.key("credentialCheckSeconds"); writer.int(Self.seconds(credentialCheckInterval))
        writer.key("startLimit")
        if let startLimit { writer.int(startLimit) } else { writer.null() }
        writer.key("startWindowSeconds"); writer.int(Self.seconds(startWindow))
        writer.key("rateLimit")
        if let rateLimit {
            writer.beginObject()
            writer.key("perSecond"); writer.int(rateLimit.perSecond)
            writer.key("burst"); writer.int(rateLimit.burst)
            writer.endObject()
        } else {
            writer.null()
        }
        writer.key("maxBodyBytes"); writer.int(maxBodyBytes)
        writer.key("statusPage"); writer.bool(statusPage)
        writer.key("logFormat"); writer.string(logFormat.rawValue)
        writer.key("allowReadableKey"); writer.bool(allowReadableKey)
        writer.key("standby"); writer.bool(standby)
        writer.key("standbyBackupFile"); if let standbyBackupFile { writer.string(standbyBackupFile) } else { writer.null() }
        writer.key("cluster")
        if let cluster {
            writer.beginObject()
            writer.key("redis"); writer.string(cluster.redis.description)
            if let passwordFile = cluster.passwordFile { writer.key("passwordFile"); writer.string(passwordFile) }
            writer.key("node"); writer.string(cluster.node)
            writer.key("shards"); writer.int(cluster.shards)
            writer.key("claimSeconds"); writer.int(Self.seconds(cluster.claimAfter))
            writer.key("registrationStreamLength"); writer.int(cluster.registrationStreamLength)
            writer.endObject()
        } else {
            writer.null()
        }
        writer.endObject()
        return writer.string
    }

    /// Whole seconds: every duration setting is read in whole seconds.
    package static func seconds(_ duration: Duration) -> Int64 { duration.components.seconds }
}
