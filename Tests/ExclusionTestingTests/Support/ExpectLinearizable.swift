import ExclusionTesting
import Testing

/// Expects a run to have shown every history linearizable, and logs its one-line summary (how
/// many histories, how long the checks took, and the seed) so the numbers show in the test output.
func expectLinearizable<Input, Output>(
    _ report: ScenarioReport<Input, Output>, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    print("\(what): \(report.description.prefix { $0 != "\n" })")
    #expect(report.passed, "\(report)", sourceLocation: sourceLocation)
}

/// Expects a run of a deliberately broken object to have found a violation.
///
/// Such runs come from `bugCatchingRunner`: they stop at the first violation, which usually comes
/// within a second, but how soon depends on the scheduler and on the other tests running at the
/// same time.
func expectViolation<Input, Output>(
    _ report: ScenarioReport<Input, Output>, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    print("\(what), caught: \(report.description.prefix { $0 != "\n" })")
    #expect(report.failure != nil, "\(report)", sourceLocation: sourceLocation)
}
