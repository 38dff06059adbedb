import SplitMix

/// The random source operations are generated from: SplitMix64, so a seed always gives the same
/// operations.
public struct ScenarioGenerator: RandomNumberGenerator, Sendable {
    /// The thread the operation being generated will run on.
    public let thread: Int
    private var random: SplitMix64

    init(seed: UInt64, thread: Int) {
        random = SplitMix64(seed: seed)
        self.thread = thread
    }

    public mutating func next() -> UInt64 { random.next() }
}
