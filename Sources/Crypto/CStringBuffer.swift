/// Text from a fixed-size C `char` buffer that C code filled with a NUL-terminated string.
public enum CStringBuffer {
    public static func string(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
