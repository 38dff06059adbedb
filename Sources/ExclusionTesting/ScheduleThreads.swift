/// The threads of one run of an exploration without a model, and the checks that follow them.
///
/// ``ScheduleExplorer/explore(preemptionBound:seed:search:_:)`` hands one to its body for every
/// schedule it runs, made afresh: the body makes what the threads share, spawns the threads, and
/// says what must hold once they have all finished.
///
/// ```swift
/// let report = await ScheduleExplorer.explore(preemptionBound: 2, seed: 7) { threads in
///     let seats = Seats()                       // made afresh for every schedule
///     threads.spawn { _ = try seats.reserve(1) }
///     threads.spawn { _ = try await seats.reserveAsync(1) }
///     threads.finally { guard seats.count == 1 else { throw Overbooked() } }
/// }
/// ```
///
/// The body must spawn the same threads every time: the explorer replays each schedule from the
/// start, and a schedule names threads by the order they were spawned in, from 0.
public final class ScheduleThreads: @unchecked Sendable {
    // @unchecked: the lists are filled by the body, on the explorer's thread, before any thread
    // starts, and only read after.

    enum Body: Sendable {
        case synchronous(@Sendable () throws -> Void)
        case asynchronous(@Sendable () async throws -> Void)
    }

    private(set) var bodies: [Body] = []
    private(set) var checks: [@Sendable () throws -> Void] = []

    init() {}

    /// Adds a thread that runs `body`. A throw fails the schedule.
    public func spawn(_ body: @escaping @Sendable () throws -> Void) {
        bodies.append(.synchronous(body))
    }

    /// Adds a thread that runs `body` in a task of its own. Its awaited accesses are switch points,
    /// and the child tasks it starts (`async let`, a task group's children) are threads of their
    /// own. A throw fails the schedule.
    public func spawn(_ body: @escaping @Sendable () async throws -> Void) {
        bodies.append(.asynchronous(body))
    }

    /// Adds a check that runs once every thread has finished: a throw fails the schedule. Checks
    /// run in the order they were added, on one more thread, which the table shows as `finally`.
    public func finally(_ check: @escaping @Sendable () throws -> Void) {
        checks.append(check)
    }

    /// Runs the thread spawned `number`th.
    func run(_ number: Int) async throws {
        guard bodies.indices.contains(number) else { throw ThreadsDiffer(spawned: bodies.count) }
        switch bodies[number] {
        case .synchronous(let body): try body()
        case .asynchronous(let body): try await body()
        }
    }

    /// The body of the thread spawned `number`th, if it is synchronous: it runs on its thread,
    /// with no task.
    func synchronousBody(_ number: Int) -> (@Sendable () throws -> Void)? {
        guard bodies.indices.contains(number), case .synchronous(let body) = bodies[number] else { return nil }
        return body
    }

    /// Runs every check, in order, until one throws.
    func check() throws {
        for check in checks { try check() }
    }
}

/// What a body that spawned fewer threads than it did the first time is told.
struct ThreadsDiffer: Error, CustomStringConvertible {
    let spawned: Int
    var description: String {
        "the body spawned \(spawned) threads this time, and more before: it must spawn the same threads every time"
    }
}

/// The model of an exploration without one (``ScheduleExplorer/explore(preemptionBound:seed:search:_:)``):
/// each thread's run is one operation, and every history is accepted. What fails a schedule is
/// what the threads and the checks make of it: a throw, a trap, a deadlock, a re-entrant access,
/// a lock-order inversion.
public struct AnyHistory: SequentialModel {
    /// A thread's run: the closure it was spawned with.
    public struct Input: Sendable, CustomStringConvertible {
        /// The thread, numbered from 0 in the order it was spawned.
        public let thread: Int

        public var description: String { "its closure" }
    }

    /// A run that returned.
    public struct Output: Equatable, Sendable, CustomStringConvertible {
        public var description: String { "returns" }
    }

    public init() {}

    public var initialState: Int { 0 }

    public func step(_ state: Int, _ input: Input) -> (output: Output, state: Int) { (Output(), state) }
}

extension ScheduleExplorer where Model == AnyHistory {
    /// Explores the schedules of the threads `body` spawns, and fails a schedule when a thread or a
    /// check throws, a thread traps, the threads deadlock, or an access is re-entrant or inverts
    /// the lock order; no model needed.
    ///
    /// `body` runs afresh for every schedule, on the explorer's thread: make in it everything the
    /// threads share, spawn them, and add the checks that must hold once they have finished. The
    /// schedules are searched, reduced and reported as ``run(setUp:inputs:perform:)-1002v``'s are.
    ///
    /// ```swift
    /// let report = await ScheduleExplorer.explore(preemptionBound: 2, seed: 7) { threads in
    ///     let seats = Seats()
    ///     threads.spawn { _ = try seats.reserve(1) }
    ///     threads.spawn { _ = try await seats.reserveAsync(1) }
    ///     threads.finally { guard seats.count == 1 else { throw Overbooked() } }
    /// }
    /// #expect(report.passed, "\(report)")
    /// ```
    ///
    /// - Parameters:
    ///   - preemptionBound: The most preemptions a schedule may have.
    ///   - seed: The randomized search's seed; for a systematic one, only a name for the run.
    ///   - search: How schedules are chosen.
    ///   - body: Makes the shared objects, spawns the threads, adds the checks.
    /// - Returns: A report; it holds the first failure found, if any, with its schedule, which
    ///   ``replay(_:preemptionBound:seed:search:_:)`` runs again.
    public static func explore(
        preemptionBound: Int = 2, seed: UInt64 = .random(in: .min ... .max), search: Search = .systematic,
        _ body: @escaping @Sendable (ScheduleThreads) -> Void
    ) async -> ScheduleReport<AnyHistory.Input, AnyHistory.Output> {
        await explore(preemptionBound: preemptionBound, seed: seed, search: search, lockOrder: .asExclusionDoes, body)
    }

    /// ``explore(preemptionBound:seed:search:_:)``, with lock-order inversions counted as `lockOrder` says:
    /// `.never` to see the deadlocks that nesting in both orders leads to, `.always` to report the
    /// inversion in a build that doesn't check the lock order; and with `outsideWaitLimit` as
    /// ``outsideWaitLimit``: how long a task may wait, once no thread can go on, for something
    /// the explorer doesn't run to resume it.
    public static func explore(
        preemptionBound: Int = 2, seed: UInt64 = .random(in: .min ... .max), search: Search = .systematic,
        lockOrder: LockOrderChecking = .asExclusionDoes, outsideWaitLimit: Duration = .seconds(10),
        _ body: @escaping @Sendable (ScheduleThreads) -> Void
    ) async -> ScheduleReport<AnyHistory.Input, AnyHistory.Output> {
        var explorer = threadsExplorer(body, preemptionBound: preemptionBound, seed: seed, search: search)
        explorer.lockOrder = lockOrder
        explorer.outsideWaitLimit = outsideWaitLimit
        return await explorer.explore(explorer.threadsExploration(body)) { $0.run() }
    }

    /// Runs exactly `schedule` again, from a report of ``explore(preemptionBound:seed:search:_:)``
    /// with the same `body`.
    ///
    /// - Returns: A report of one schedule, with the failure it ends in, if any; a failure of kind
    ///   ``ScheduleReport/Failure/Kind/scheduleMismatch`` if the schedule doesn't fit the threads.
    public static func replay(
        _ schedule: Schedule, preemptionBound: Int = 2, seed: UInt64 = .random(in: .min ... .max),
        search: Search = .systematic, _ body: @escaping @Sendable (ScheduleThreads) -> Void
    ) async -> ScheduleReport<AnyHistory.Input, AnyHistory.Output> {
        let explorer = threadsExplorer(body, preemptionBound: preemptionBound, seed: seed, search: search)
        return await explorer.explore(explorer.threadsExploration(body)) { $0.replay(schedule) }
    }

    /// An explorer of one scenario: one operation per thread the body spawns.
    private static func threadsExplorer(
        _ body: @Sendable (ScheduleThreads) -> Void, preemptionBound: Int, seed: UInt64, search: Search
    ) -> Self {
        let sample = ScheduleThreads()
        body(sample)
        precondition(!sample.bodies.isEmpty, "an exploration needs at least one thread: spawn one in its body")
        return ScheduleExplorer(
            model: AnyHistory(), threads: sample.bodies.count, operationsPerThread: 1...1,
            preemptionBound: preemptionBound, scenarios: 1, search: search, seed: seed)
    }

    private func threadsExploration(
        _ body: @escaping @Sendable (ScheduleThreads) -> Void
    ) -> ScheduleExploration<AnyHistory, ScheduleThreads> {
        ScheduleExploration(
            self,
            {
                let threads = ScheduleThreads()
                body(threads)
                return threads
            }, { AnyHistory.Input(thread: $0.thread) },
            .either(
                synchronously: { threads, input in
                    threads.synchronousBody(input.thread).map { body in
                        {
                            try body()
                            return AnyHistory.Output()
                        }
                    }
                },
                asynchronously: { threads, input in
                    try await threads.run(input.thread)
                    return AnyHistory.Output()
                }), finally: { threads in try threads.check() })
    }
}
