/// xorshift64*: fast randomness for things that must be spread, not secret — back-off jitter,
/// fault injection, the simulator's response IDs. Seed it once from `RandomSource`; never use it
/// for keys or tokens.
public struct FastRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed | 1 }

    public mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 2685821657736338717
    }

    /// Uniform in [0, 1).
    public mutating func unitInterval() -> Double { Double(next() >> 11) / Double(UInt64(1) << 53) }
}
