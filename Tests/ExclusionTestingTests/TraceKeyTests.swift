import SplitMix
import Testing

@testable import ExclusionTesting

/// The key of a trace, built a step at a time as executions build it, is the key built from all
/// the steps at once: the greedy order that runs the lowest-numbered thread whenever it can.
@Suite("ScheduleExplorer's trace keys")
struct TraceKeyTests {
    @Test(arguments: 0..<20)
    func aKeyBuiltAStepAtATimeIsTheKeyOfTheWholeTrace(seed: Int) {
        var random = SplitMix64(seed: UInt64(seed))
        var steps: [ScheduleStep] = []
        var key = TraceKey.empty
        for _ in 0..<60 {
            var step = ScheduleStep(entity: Int.random(in: 0..<4, using: &random))
            for _ in 0..<Int.random(in: 0...2, using: &random) {
                step.touch(Int.random(in: -3..<3, using: &random), exclusively: Bool.random(using: &random))
            }
            step.calls = Int.random(in: 0..<6, using: &random) == 0
            step.returns = Int.random(in: 0..<6, using: &random) == 0
            step.touchesUnseen = Int.random(in: 0..<30, using: &random) == 0
            key = key.appending(step, to: steps[...], current: nil)
            steps.append(step)
            #expect(key == TraceKey(steps, current: nil), "after \(steps.count) steps")
        }
    }
}
