import Crypto
import Dispatch
import Vocabulary
import Testing

@Suite struct RandomSourceTests {
    @Test func threadsDrawDistinctBytesFromTheSharedGenerator() {
        let seen = Lock(Set<[UInt8]>())
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<100 {
                let bytes = RandomSource.shared.bytes(16)
                seen.withLock { _ = $0.insert(bytes) }
            }
        }
        #expect(seen.withLock { $0.count } == 800)
        // Requests above mbedTLS's 1024-byte limit per call are split, not refused.
        let large = RandomSource.shared.bytes(5000)
        #expect(large.count == 5000 && Set(large).count > 200)
    }

    @Test func generatorDrivesStandardLibraryRandomness() {
        var generator = RandomSource.Generator()
        let values = (0..<32).map { _ in Int.random(in: 0..<1_000_000, using: &generator) }
        #expect(Set(values).count > 30)
        #expect(values.allSatisfy { (0..<1_000_000).contains($0) })
    }
}
