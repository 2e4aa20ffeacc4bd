import Redis
import RedisTestSupport

/// Fields from text pairs.
func fields(_ pairs: KeyValuePairs<String, String>) -> [StreamEntry.Field] { pairs.map { StreamEntry.Field($0.key, $0.value) } }
