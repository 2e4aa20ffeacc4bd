import JSONCore

extension StoreStatistics {
    /// The statistics as one JSON object: what `tokens stats --json` prints and the daemon's
    /// `GET /v1/tokens/stats` answers (one format for both). `store`: the directory, when known.
    public func json(store directory: String?) -> [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        if let directory { writer.key("store"); writer.string(directory) }
        writer.key("schemaVersion"); writer.int(schemaVersion)
        writer.key("fileBytes"); writer.int(fileBytes)
        writer.key("usedBytes"); writer.int(usedBytes)
        writer.key("mapBytes"); writer.int(mapBytes)
        writer.key("installations"); writer.int(installations)
        writer.key("totalTokens"); writer.int(totalTokens)
        writer.key("activities"); writer.int(activities)
        writer.key("channels"); writer.int(channels)
        writer.key("events"); writer.int(events)
        writer.key("tokens")
        writer.beginArray()
        for count in tokens {
            writer.beginObject()
            writer.key("app"); writer.string(count.app)
            writer.key("environment"); writer.string(count.environment.name)
            writer.key("kind"); writer.string(count.kind.name)
            writer.key("count"); writer.int(count.count)
            writer.endObject()
        }
        writer.endArray()
        writer.key("topics")
        writer.beginArray()
        for count in topics {
            writer.beginObject()
            writer.key("app"); writer.string(count.app)
            writer.key("environment"); writer.string(count.environment.name)
            writer.key("topic"); writer.string(count.topic)
            writer.key("count"); writer.int(count.count)
            writer.endObject()
        }
        writer.endArray()
        writer.endObject()
        return writer.bytes
    }
}
