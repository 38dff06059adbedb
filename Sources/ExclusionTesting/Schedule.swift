/// One interleaving of a scenario: which thread went on at each switch point.
///
/// A plain value: save it with a test (it is `Codable`), and hand it to
/// ``ScheduleExplorer/replay(_:setUp:inputs:perform:)-4ojlz`` to run exactly that interleaving again,
/// with the same explorer's settings (the scenario's operations come from ``seed`` and
/// ``scenario``).
///
/// ```swift
/// let saved = try JSONEncoder().encode(report.failure!.schedule)
/// // later, in a test of its own:
/// let schedule = try JSONDecoder().decode(Schedule.self, from: saved)
/// let again = await explorer.replay(schedule, setUp: { Ledger() }, inputs: generate, perform: apply)
/// ```
public struct Schedule: Equatable, Codable, Sendable, CustomStringConvertible {
    /// The seed the scenario's operations were generated from.
    public var seed: UInt64
    /// Which scenario of that seed, counting from 0.
    public var scenario: Int
    /// At each switch point, in order, the thread that went on: `0..<threads` for the scenario's
    /// threads (with ``ScheduleExplorer/explore(preemptionBound:seed:search:_:)``, the spawned
    /// ones, in the order spawned), and from `threads` on for the drains of submitted work and the
    /// child tasks the threads started, numbered as they appeared. The threads' starts, each
    /// running up to its first switch point in turn, come before the first choice.
    public var choices: [Int]
    /// How many choices stopped a thread that could have gone on.
    public var preemptions: Int

    public init(seed: UInt64, scenario: Int, choices: [Int], preemptions: Int) {
        self.seed = seed
        self.scenario = scenario
        self.choices = choices
        self.preemptions = preemptions
    }

    public var description: String {
        let switches = choices.map(String.init).joined(separator: " ")
        return "scenario \(scenario) of seed \(seed): [\(switches)], "
            + "\(preemptions) preemption\(preemptions == 1 ? "" : "s")"
    }
}
