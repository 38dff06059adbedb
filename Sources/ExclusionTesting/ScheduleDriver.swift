import Dispatch
import Foundation

/// What an execution's switch points hand the next decision to, once its threads have started.
protocol SwitchPointDriver: AnyObject, Sendable {
    /// Makes the next decision and grants its step; nil once the execution is over.
    func next() -> ScheduledEntity?
}

/// Makes an execution's decisions on the thread that stands at the switch point, and grants the
/// next step from there.
///
/// If the coordinator made every decision, each step would cost two wake-ups through the kernel:
/// the entity would wake the coordinator at its switch point and sleep, and the coordinator would
/// wake the next entity, even when it is the same one, as it mostly is under a preemption bound.
/// Made where the step ended, a decision that runs the same entity on costs no wake-up, and one
/// that switches costs one: the entity wakes the next and sleeps. The coordinator only watches,
/// for the end, a trap, or a step that outruns the step limit.
///
/// One thread at a time decides, the one whose step just ended (they run one at a time), and
/// `lock` keeps the coordinator's look at a step that may have outrun its limit from crossing a
/// decision being made.
final class ScheduleDriver<Chooser: ScheduleChooser>: SwitchPointDriver, @unchecked Sendable {
    // @unchecked: the vars are only touched with `lock` held.
    private let lock = NSLock()
    private let execution: ScheduledExecution
    private var chooser: Chooser
    private var decisions: [Decision] = []
    private var current: Int?
    private var preemptions = 0
    private var isOver = false
    /// The scenario's threads that haven't started yet: they start first, in order, each running
    /// up to its first switch point, with no decision made.
    private var starts: ArraySlice<Int>

    init(_ execution: ScheduledExecution, _ chooser: Chooser, starting threads: Range<Int>) {
        self.execution = execution
        self.chooser = chooser
        starts = ArraySlice(threads)
    }

    /// The most switch points an execution may reach: threads that take turns for ever would
    /// otherwise never end one. (Threads that only spin on tries are caught much sooner, as a
    /// livelock: `ScheduledExecution.livelockTries`.)
    static var longestExecution: Int { 10_000 }

    func next() -> ScheduledEntity? {
        lock.withLock {
            guard !isOver else { return nil }
            if let entity = start() ?? decide() { return entity }
            isOver = true
            return nil
        }
    }

    /// Grants the next thread's start, if one hasn't started. Call with `lock` held.
    private func start() -> ScheduledEntity? {
        guard let thread = starts.first, execution.stopped == nil else { return nil }
        starts.removeFirst()
        return execution.prepareGrant(thread, .proceed, preempting: false)
    }

    /// Chooses the next step and grants it, or nil if the execution is over. Call with `lock` held.
    private func decide() -> ScheduledEntity? {
        if current != nil, execution.isLivelocked { return nil }
        while execution.stopped == nil, !execution.isFinished {
            guard decisions.count < Self.longestExecution else {
                execution.endLivelock(after: decisions.count)
                return nil
            }
            let choices = execution.choices()
            guard !choices.isEmpty else {
                if execution.awaitArrival() { continue }
                execution.deadlock()
                return nil
            }
            let enabled = choices.map(\.entity)
            let yielded = current.map(execution.hasYielded) ?? false
            guard let chosen = chooser.choose(at: decisions.count, enabled: enabled, current: current, yielded: yielded)
            else {
                execution.mismatch(at: decisions.count, enabled: enabled)
                return nil
            }
            let decision = Decision(
                enabled: enabled, current: current, yielded: yielded, chosen: chosen, preemptionsBefore: preemptions,
                key: execution.key(current: current), stepsBefore: execution.stepCount)
            let preempting = decision.preempts(for: chosen)
            decisions.append(decision)
            if preempting { preemptions += 1 }
            current = chosen
            let grant = choices.first { $0.entity == chosen }!.grant
            return execution.prepareGrant(chosen, grant, preempting: preempting)
        }
        return nil
    }

    /// Runs the execution from its first step to its end, on the coordinator: grants the first
    /// thread's start, then watches until a switch point finds the execution over, a thread traps, or
    /// a step outruns the step limit.
    func run() {
        guard let first = next() else { return }
        first.wake.signal()
        while true {
            let deadline = execution.stepDeadline
            let woke = execution.coordinator.wait(timeout: deadline) == .success
            // A trap leaves its thread standing, with the step it ran: nothing else will run.
            if execution.trap.load(ordering: .acquiring) != 0 {
                execution.takeTrapIn()
                return
            }
            let over = lock.withLock { () -> Bool in
                if isOver { return true }
                guard !woke, execution.outranStepLimit(since: deadline) else { return false }
                isOver = true
                return true
            }
            if over { return }
        }
    }

    /// The decisions made, and the chooser as they left it; once `run` has returned.
    ///
    /// A thread that trapped while it decided (in the explorer's own code, not the scenario's)
    /// stands in its signal handler with `lock` held for good: what it left is taken as it is.
    var results: (decisions: [Decision], chooser: Chooser) {
        guard lock.try() else { return (decisions, chooser) }
        defer { lock.unlock() }
        return (decisions, chooser)
    }
}
