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

extension ScenarioGenerator {
    /// The operations of scenario number `scenario` of `seed`: a list for each of `threads`
    /// threads, each as long as `operations` picks, made by `inputs` from a generator of the thread's.
    static func programs<Input>(
        seed: UInt64, scenario: Int, threads: Int, operations: ClosedRange<Int>,
        _ inputs: (inout ScenarioGenerator) -> Input
    ) -> [[Input]] {
        // Each scenario's operations come from a seed of their own, derived from the run's.
        var picker = ScenarioGenerator(seed: seed &+ UInt64(scenario), thread: -1)
        let scenarioSeed = picker.next()
        return (0..<threads).map { thread in
            var generator = ScenarioGenerator(
                seed: scenarioSeed &+ UInt64(thread + 1) &* 0x2545_F491_4F6C_DD1D, thread: thread)
            let count = Int.random(in: operations, using: &picker)
            return (0..<count).map { _ in inputs(&generator) }
        }
    }
}
