import Testing
import Vocabulary

/// The one token type: what every user (APNs parsing, the store's bound, the sender's `:path`, the
/// fan-out's windows, FCM next) relies on.
@Suite struct DeviceTokenTests {
    static let hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

    @Test func aTokenRoundTripsThroughHexInLowerCaseAndNeverPrintsWhole() {
        let token = DeviceToken(hexDigits: Self.hex.uppercased())!
        #expect(token.count == 32)
        #expect(token.hex == Self.hex)
        #expect(token.redacted == "…89abcdef")
        #expect("\(token)" == "…89abcdef")
        #expect(!String(reflecting: token).contains("01234567"))
        #expect(DeviceToken(hexDigits: "abc") == nil)
        #expect(DeviceToken(hexDigits: "zz") == nil)
        #expect(DeviceToken(hexDigits: "") == nil)
    }

    @Test func theStorageHoldsTheLongestKindAndNoMore() {
        let longest = [UInt8](repeating: 0xfe, count: DeviceToken.capacity)
        #expect(DeviceToken(bytes: longest)?.count == 255)
        #expect(DeviceToken(bytes: longest)?.withBytes { Array($0) } == longest)
        #expect(DeviceToken(bytes: longest + [0xfe]) == nil)
        #expect(DeviceToken(bytes: [UInt8]()) == nil)
        #expect(DeviceToken(hexDigits: String(repeating: "ab", count: 255))?.count == 255)
        #expect(DeviceToken(hexDigits: String(repeating: "ab", count: 256)) == nil)
        #expect(DeviceToken().count == 0)
    }

    @Test func aTokenIsInlineSoCopyingItIntoAJobAllocatesNothing() {
        // 255 bytes and the count: four cache lines. No reference inside is the compiler's to
        // check (the type is `BitwiseCopyable`); this checks nothing grew.
        #expect(MemoryLayout<DeviceToken>.size == 256)
    }

    @Test func everyWayInMakesTheSameToken() {
        let bytes = Hex.decode(Self.hex)!
        let fromArray = DeviceToken(bytes: bytes)!
        let fromSlice = DeviceToken(bytes: bytes[...])!
        let fromSequence = DeviceToken(bytes: bytes.lazy.map { $0 })!
        let fromRaw = bytes.withUnsafeBytes { DeviceToken($0)! }
        let fromHex = DeviceToken(hexDigits: Self.hex)!
        #expect(Set([fromArray, fromSlice, fromSequence, fromRaw, fromHex]).count == 1)
        // A prefix is another token, though the bytes past it are zero in both.
        #expect(DeviceToken(bytes: bytes + [0]) != fromArray)
    }

    @Test func overwritingDerivesADistinctTokenOfTheSameLength() {
        let token = DeviceToken(hexDigits: Self.hex)!
        var derived = token
        derived.overwrite(at: 0, bigEndian: 0x1122334455667788)
        #expect(derived.hex.hasPrefix("1122334455667788"))
        #expect(derived.count == token.count)
        #expect(derived != token)
    }

    @Test func theSenderWritesTheHexPathWithoutAString() {
        let token = DeviceToken(hexDigits: "deadbeef01")!
        var out = [UInt8](repeating: 0, count: 2 * DeviceToken.capacity)
        let written = out.withUnsafeMutableBufferPointer { token.writeHex(to: $0.baseAddress!) }
        #expect(String(decoding: out[..<written], as: UTF8.self) == "deadbeef01")
    }

    @Test func eachKindsBoundIsWithinTheStorage() {
        #expect(DeviceToken.apnsByteCount == 1...100)
        #expect(DeviceToken.storedAPNsByteCount == 8...100)
        #expect(DeviceToken.issuedAPNsByteCount == 32)
        #expect(DeviceToken.fcmByteCount == 1...255)
        #expect(DeviceToken.fcmByteCount.upperBound == DeviceToken.capacity)
    }

    @Test func anFCMRegistrationTokenIsUpTo255BytesOfItsAlphabet() {
        let typical = "cKx3Hd8aQ0u:APA91bE-" + String(repeating: "x_Y9", count: 35)
        #expect(DeviceToken.isFCMRegistrationToken(typical))
        #expect(DeviceToken.isFCMRegistrationToken(String(repeating: "a", count: 255)))
        #expect(!DeviceToken.isFCMRegistrationToken(String(repeating: "a", count: 256)))
        #expect(!DeviceToken.isFCMRegistrationToken(""))
        #expect(!DeviceToken.isFCMRegistrationToken("abc def"))
        #expect(!DeviceToken.isFCMRegistrationToken("abc/def"))
        #expect(DeviceToken(bytes: Array(typical.utf8))?.count == typical.utf8.count)
    }
}
