import JSONCore

/// The `aps.alert` of a Live Activity push: a title, a body and an optional sound. Texts are plain
/// strings or localization keys the app resolves on the device.
public struct LiveActivityAlert: Sendable, Equatable {
    public enum Text: Sendable, Equatable {
        case plain(String)
        /// `{"loc-key":…,"loc-args":[…]}`: a key from the app's Localizable strings and its arguments.
        case localized(key: String, arguments: [String])
    }

    public var title: Text
    public var body: Text
    /// `default`, or the name of a sound file in the app bundle.
    public var sound: String?

    public init(title: Text, body: Text, sound: String? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }

    public init(title: String, body: String, sound: String? = nil) {
        self.init(title: .plain(title), body: .plain(body), sound: sound)
    }

    /// Writes `{"title":…,"body":…,"sound":…}`.
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("title")
        write(title, to: &writer)
        writer.key("body")
        write(body, to: &writer)
        if let sound {
            writer.key("sound")
            writer.string(sound)
        }
        writer.endObject()
    }

    private func write(_ text: Text, to writer: inout JSONWriter) {
        switch text {
        case .plain(let string):
            writer.string(string)
        case .localized(let key, let arguments):
            writer.beginObject()
            writer.key("loc-key")
            writer.string(key)
            writer.key("loc-args")
            writer.beginArray()
            for argument in arguments { writer.string(argument) }
            writer.endArray()
            writer.endObject()
        }
    }
}
