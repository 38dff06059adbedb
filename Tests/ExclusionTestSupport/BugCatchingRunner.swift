import ExclusionTesting

/// A runner for a test that must catch a planted bug, limited by histories rather than by time.
///
/// Each history is one more chance for the threads to meet inside the bug's window. A busy machine
/// (or ThreadSanitizer) makes every history many times slower, and the threads meet less often
/// when they wait for processors; a time limit then fails a runner that would have caught the bug
/// a little later, a limit in histories doesn't. The limit is many times what the DocumentManager's
/// and the bank's planted bugs needed beside busy loops (Verification/README.md, "Under load"); the
/// suite's time limit still ends a runner that never catches its bug. A test that can put its
/// threads in the bug's window by a hand-off does (the scenario runner's own tests), and needs one
/// history.
public func bugCatchingRunner<Model: SequentialModel>(_ model: Model) -> ScenarioRunner<Model> {
    ScenarioRunner(model: model, histories: 20_000, timeLimit: .seconds(24 * 3_600))
}
