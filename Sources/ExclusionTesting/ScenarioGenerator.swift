/// The random source operations are generated from: SplitMix64, so a seed always gives the same
/// operations.
public struct ScenarioGenerator: RandomNumberGenerator, Sendable {
    /// The thread the operation being generated will run on.
    public let thread: Int
    private var state: UInt64

    init(seed: UInt64, thread: Int) {
        self.state = seed
        self.thread = thread
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
