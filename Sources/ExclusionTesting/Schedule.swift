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
///
/// Or paste the form a report prints back into code:
///
/// ```swift
/// let schedule = Schedule("scenario 0 of seed 7: [0 1 1 0], 1 preemption")!
/// ```
public struct Schedule: Equatable, Codable, Sendable, LosslessStringConvertible {
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

    /// The schedule that `description` printed, as a report and a crash's notice show it:
    /// `scenario 0 of seed 7: [0 1 1 0], 1 preemption`; nil for anything else. Whitespace around
    /// it is ignored, nothing else is.
    public init?(_ description: String) {
        var reader = _ScheduleReader(description)
        guard reader.take("scenario "), let scenario: Int = reader.number(), reader.take(" of seed "),
            let seed: UInt64 = reader.number(), reader.take(": [")
        else { return nil }
        var choices: [Int] = []
        while !reader.take("]") {
            guard choices.isEmpty || reader.take(" "), let choice: Int = reader.number() else { return nil }
            choices.append(choice)
        }
        guard reader.take(", "), let preemptions: Int = reader.number(),
            reader.take(preemptions == 1 ? " preemption" : " preemptions"), reader.isAtEnd,
            preemptions <= choices.count
        else { return nil }
        self.init(seed: seed, scenario: scenario, choices: choices, preemptions: preemptions)
    }
}

/// Reads a printed schedule from the start, a literal or a number at a time.
private struct _ScheduleReader {
    private var text: Substring

    init(_ text: String) {
        var trimmed = text.drop { $0.isWhitespace }
        while trimmed.last?.isWhitespace == true { trimmed = trimmed.dropLast() }
        self.text = trimmed
    }

    var isAtEnd: Bool { text.isEmpty }

    /// Whether the text goes on with `literal`; if so, reads past it.
    mutating func take(_ literal: String) -> Bool {
        guard text.hasPrefix(literal) else { return false }
        text = text.dropFirst(literal.count)
        return true
    }

    /// The decimal number the text goes on with, read past; nil if it doesn't, or if it doesn't fit.
    mutating func number<Number: FixedWidthInteger>() -> Number? {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, let number = Number(digits) else { return nil }
        text = text.dropFirst(digits.count)
        return number
    }
}
