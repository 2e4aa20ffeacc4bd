import Crypto
import Testing

@Suite struct Base64URLTests {
    @Test(arguments: [
        ("", ""), ("f", "Zg"), ("fo", "Zm8"), ("foo", "Zm9v"), ("foob", "Zm9vYg"), ("fooba", "Zm9vYmE"), ("foobar", "Zm9vYmFy"),
    ])
    func rfc4648VectorsWithoutPadding(plain: String, encoded: String) {
        #expect(Base64URL.encode(Array(plain.utf8)) == encoded)
        #expect(Base64URL.decode(encoded) == Array(plain.utf8))
    }

    @Test func urlAlphabetRoundTripsEveryByte() {
        let bytes = (0...255).map { UInt8($0) }
        let text = Base64URL.encode(bytes)
        #expect(!text.contains("+") && !text.contains("/") && !text.contains("="))
        #expect(Base64URL.decode(text) == bytes)
    }

    @Test(arguments: ["Zg==", "Zm9v+", "Zm9v/", "Z", "Zh", "Zm9 v"])
    func paddingStandardAlphabetBadLengthsAndLeftoverBitsAreRefused(text: String) {
        #expect(Base64URL.decode(text) == nil)
    }
}
