#if canImport(Glibc)
import Glibc
#endif
import Testing
import Vocabulary

/// The vocabulary every module shares: what the callers' outputs (token files, `:path`, JSON
/// escapes, `%XX`, apns-ids, store keys) depend on byte for byte.
@Suite struct VocabularyTests {
    @Test func hexEncodesBothCasesAndDecodesEither() {
        let bytes: [UInt8] = [0x00, 0x0f, 0xa5, 0xff]
        #expect(Hex.encode(bytes) == "000fa5ff")
        #expect(Hex.encode(bytes, uppercase: true) == "000FA5FF")
        #expect(Hex.decode("000fA5FF") == bytes)
        #expect(Hex.decode("abc") == nil)
        #expect(Hex.decode("0g") == nil)
        #expect(Hex.decode("") == [])
    }

    @Test func hexWritesIntoABufferWithoutAllocating() {
        var out = [UInt8](repeating: 0, count: 6)
        let written = [UInt8]([0xde, 0xad, 0x01]).withUnsafeBytes { raw in
            out.withUnsafeMutableBufferPointer { Hex.write(raw, to: $0.baseAddress!) }
        }
        #expect(written == 6)
        #expect(String(decoding: out, as: UTF8.self) == "dead01")
    }

    @Test func uuidFormatsAndStampsVersion4() {
        let bytes = [UInt8](0..<16)
        #expect(UUIDText.format(bytes) == "00010203-0405-0607-0809-0a0b0c0d0e0f")
        #expect(UUIDText.format(bytes, uppercase: true) == "00010203-0405-0607-0809-0A0B0C0D0E0F")
        let stamped = UUIDText.version4([UInt8](repeating: 0xff, count: 16))
        #expect(stamped == "ffffffff-ffff-4fff-bfff-ffffffffffff")
    }

    @Test func uuidParsesWithTheCaseOfItsLetters() {
        #expect(UUIDText.letters("123e4567-e89b-42d3-a456-426614174000".utf8) == .lowercase)
        #expect(UUIDText.letters("123E4567-E89B-42D3-A456-426614174000".utf8) == .uppercase)
        #expect(UUIDText.letters("123e4567-E89B-42d3-a456-426614174000".utf8) == .mixed)
        #expect(UUIDText.letters("12345678-1234-1234-1234-123456789012".utf8) == .digitsOnly)
        #expect(UUIDText.letters("123e4567e89b-42d3-a456-4266141740000".utf8) == nil)
        #expect(UUIDText.letters("123e4567-e89b-42d3-a456-42661417400g".utf8) == nil)
        var bytes = [UInt8](repeating: 0, count: 16)
        let letters = bytes.withUnsafeMutableBytes { UUIDText.parse("00010203-0405-0607-0809-0a0b0c0d0e0f".utf8, into: $0) }
        #expect(letters == .lowercase && bytes == [UInt8](0..<16))
    }

    @Test func wallClockAgreesWithTime() {
        let before = Int64(time(nil))
        let seconds = WallClock.seconds()
        let milliseconds = WallClock.milliseconds()
        #expect(seconds >= before && seconds <= before + 1)
        #expect(Int64(milliseconds / 1000) >= seconds && Int64(milliseconds / 1000) <= seconds + 1)
    }
}
