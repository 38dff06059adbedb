import Testing

@testable import ExclusionTesting

/// PCT's guarantee (a bug of depth d found with probability at least 1/(n·k^(d-1)) per schedule)
/// holds only if each of its d - 1 change points takes effect.
@Suite("PCT's chooser")
struct PriorityChooserTests {
    @Test func everyChangePointHasASwitchPointAndALevelOfItsOwn() {
        var wrong: [String] = []
        for seed in UInt64(0)..<500 {
            for (depth, steps) in [(3, 2), (4, 3), (4, 40), (6, 8), (1, 5)] {
                let chooser = PriorityChooser(seed: seed, depth: depth, steps: steps)
                let count = min(depth - 1, steps)
                if chooser.changes.count != count || Set(chooser.changes.values) != Set(1..<count + 1) {
                    wrong.append("seed \(seed), depth \(depth), \(steps) steps: \(chooser.changes)")
                }
            }
        }
        #expect(wrong.isEmpty, "\(wrong.count) choosers lost a change point, first: \(wrong.first ?? "")")
    }

    @Test func aChangePointDropsTheThreadThatRanLastWhenItCanGoOn() {
        var chooser = PriorityChooser(priorities: [0: 30, 1: 20], changes: [3: 1], depth: 2)
        #expect(chooser.choose(at: 2, enabled: [0, 1], current: 0) == 0)
        #expect(chooser.choose(at: 3, enabled: [0, 1], current: 0) == 1)
        #expect(chooser.choose(at: 4, enabled: [0, 1], current: 1) == 1)
    }

    @Test func aChangePointDropsTheThreadAboutToRunWhenTheOneThatRanLastCannotGoOn() {
        // Thread 0 ran last and now waits; of the others, 1 outranks 2. The change point drops 1,
        // so 2 runs: a change point skipped here would weaken the guarantee.
        var chooser = PriorityChooser(priorities: [0: 30, 1: 20, 2: 10], changes: [5: 1], depth: 2)
        #expect(chooser.choose(at: 4, enabled: [1, 2], current: 0) == 1)
        #expect(chooser.choose(at: 5, enabled: [1, 2], current: 0) == 2)
        #expect(chooser.choose(at: 6, enabled: [0, 1, 2], current: 2) == 0)
    }
}
