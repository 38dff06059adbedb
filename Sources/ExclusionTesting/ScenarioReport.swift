import Foundation

/// What a ``ScenarioRunner`` found.
public struct ScenarioReport<Input: Sendable, Output: Sendable>: Sendable, CustomStringConvertible {
    /// A history that no sequential order explains.
    public struct Failure: Sendable {
        /// Which history it was, counting from 0. Running again with the report's ``seed``
        /// generates the same operations for it.
        public let history: Int
        /// Every operation of the history, in call order.
        public let operations: [HistoryOperation<Input, Output>]
        /// Where the checker got stuck: the operation it could not place, the operations
        /// overlapping it, and the last one that finished before it.
        public let excerpt: [HistoryOperation<Input, Output>]
    }

    /// The seed the run generated its operations from.
    public let seed: UInt64
    /// How many histories ran and were checked.
    public let historiesChecked: Int
    /// How many operations those histories held.
    public let operationsChecked: Int
    /// How many histories the checker could not decide within its budget.
    public let undecided: Int
    /// Whether the time limit stopped the run before all histories ran.
    public let stoppedByTimeLimit: Bool
    /// The whole run, from the first history to the last check.
    public let elapsed: Duration
    /// The part of ``elapsed`` spent checking.
    public let checkingTime: Duration
    /// The first history found not linearizable, if any. The run stops there.
    public let failure: Failure?

    /// True when every history checked was shown linearizable: no failure, and no check ran out
    /// of budget.
    public var passed: Bool { failure == nil && undecided == 0 && historiesChecked > 0 }

    /// The checker's time per history.
    public var checkingTimePerHistory: Duration {
        historiesChecked == 0 ? .zero : checkingTime / historiesChecked
    }

    public var description: String {
        var lines = [
            "\(historiesChecked) histories (\(operationsChecked) operations) checked in \(elapsed.readable), "
                + "\(checkingTimePerHistory.readable) of checking per history; seed \(seed)"
        ]
        if stoppedByTimeLimit { lines.append("stopped by the time limit") }
        if undecided > 0 { lines.append("\(undecided) histories undecided: the checker's budget ran out") }
        if let failure {
            lines.append(
                "history \(failure.history) is not linearizable; "
                    + "these operations can't be put in any order the model explains:")
            lines += failure.excerpt.map { "  \(Self.describe($0))" }
            lines.append("the whole history:")
            lines += failure.operations.map { "  \(Self.describe($0))" }
        }
        return lines.joined(separator: "\n")
    }

    /// The old name of ``Failure``: `ScheduleReport` and this report now say the same.
    @available(*, deprecated, renamed: "Failure")
    public typealias Violation = Failure

    /// The old name of ``failure``.
    @available(*, deprecated, renamed: "failure")
    public var violation: Failure? { failure }

    /// The old name of ``undecided``.
    @available(*, deprecated, renamed: "undecided")
    public var unknown: Int { undecided }

    private static func describe(_ operation: HistoryOperation<Input, Output>) -> String {
        "thread \(operation.thread): \(operation.input) -> \(operation.output)   "
            + "[called at \(operation.call), returned at \(operation.return)]"
    }
}

extension Duration {
    /// In the unit that suits it: `820 µs`, `14 ms`, `2.31 s`.
    var readable: String {
        let (seconds, attoseconds) = components
        let microseconds = Double(seconds) * 1e6 + Double(attoseconds) / 1e12
        return switch microseconds {
        case ..<1_000: "\(Int(microseconds.rounded())) µs"
        case ..<1_000_000: "\(Int((microseconds / 1_000).rounded())) ms"
        default: String(format: "%.2f s", microseconds / 1e6)
        }
    }
}
