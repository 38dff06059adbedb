/// What a ``ScheduleExplorer`` found.
public struct ScheduleReport<Input: Sendable, Output: Sendable>: Sendable, CustomStringConvertible {
    /// A schedule that failed, minimized to the fewest preemptions that still fail.
    public struct Failure: Sendable, CustomStringConvertible {
        /// What went wrong.
        public enum Kind: Sendable, Equatable {
            /// No sequential order of the operations explains their outputs.
            case notLinearizable
            /// An operation threw.
            case threw
            /// Every thread left waits for another.
            case deadlock
            /// A thread accessed an instance from inside its own access (Exclusion stops the process).
            case reentrantAccess
            /// Two instances were nested in both orders (Exclusion stops the process where it
            /// checks the lock order).
            case lockOrderInversion
            /// A thread didn't reach its next switch point in time, or no thread could go on and a
            /// task waited in vain for something the explorer doesn't run (a continuation that
            /// nothing resumes): it waits for something the explorer doesn't see.
            case stuck
            /// A replayed schedule asked for a thread that couldn't go on.
            case scheduleMismatch
            /// A thread trapped: a failed precondition, a force unwrap of nil, an index out of
            /// range, `fatalError`. The message is the runtime's (`Fatal error: …`), where it wrote
            /// one; the thread stood still from there, and the process went on.
            case crashed
        }

        public let kind: Kind
        /// What happened, in words.
        public let message: String
        /// The schedule: save it, and replay it with ``ScheduleExplorer/replay(_:setUp:inputs:perform:)-4ojlz``.
        public let schedule: Schedule
        /// The operations that returned, in call order, with their outputs. The clock counts the
        /// execution's calls and returns.
        public let operations: [HistoryOperation<Input, Output>]
        /// For a history the model can't explain, where the checker got stuck: the operation it
        /// could not place, the operations overlapping it, and the last one that finished before it.
        public let excerpt: [HistoryOperation<Input, Output>]
        /// The schedule as a table: one column per thread (and per drain of submitted work), one
        /// row per event: calls and returns, accesses beginning and instances released, waits.
        public let table: String

        public var description: String {
            var lines = ["\(message)", "schedule: \(schedule)", table]
            if !excerpt.isEmpty {
                lines.append("these operations can't be put in any order the model explains:")
                lines += excerpt.map { "  thread \($0.thread): \($0.input) -> \($0.output)" }
            }
            return lines.joined(separator: "\n")
        }
    }

    /// The seed the scenarios were generated from.
    public let seed: UInt64
    /// How many scenarios were explored, the failing one included.
    public let scenariosExplored: Int
    /// How many schedules ran, over all scenarios; minimizing a failure doesn't count.
    public let schedulesExplored: Int
    /// How many schedules weren't run because they would only have reordered independent steps
    /// (accesses of different instances, or reads of the same) of schedules that ran: the
    /// partial-order reduction's saving, each counted with every schedule it would have started.
    public let reorderingsSkipped: Int
    /// Whether every schedule within the preemption bound ran (or one that differs from it only in
    /// the order of independent steps did), for every scenario explored: false for a randomized
    /// search, a replay, and a search stopped by the schedule limit.
    public let isExhaustive: Bool
    /// How many histories the checker couldn't decide within its budget.
    public let undecided: Int
    /// What the exploration couldn't cover, for the scenarios that ran.
    public let notes: [String]
    /// The first failure found, if any. The exploration stops there.
    public let failure: Failure?
    /// From the first schedule to the report.
    public let elapsed: Duration

    /// True when schedules ran and none failed, and the checker decided every history.
    public var passed: Bool { failure == nil && undecided == 0 && schedulesExplored > 0 }

    public var description: String {
        var lines = [
            "\(schedulesExplored) schedule\(schedulesExplored == 1 ? "" : "s") of \(scenariosExplored) "
                + "scenario\(scenariosExplored == 1 ? "" : "s") explored"
                + (isExhaustive ? " (every schedule within the bound)" : "") + " in \(elapsed.readable); seed \(seed)"
        ]
        if reorderingsSkipped > 0 {
            lines.append("\(reorderingsSkipped) schedules skipped: they only reorder independent steps of others")
        }
        if undecided > 0 { lines.append("\(undecided) histories undecided: the checker's budget ran out") }
        lines += notes.map { "note: \($0)" }
        if let failure { lines.append("FAILED: \(failure)") }
        return lines.joined(separator: "\n")
    }
}
