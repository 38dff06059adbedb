import SplitMix

/// Picks who runs at each switch point of one execution.
protocol ScheduleChooser {
    /// The entity to run at the `index`th switch point, out of `enabled` (in increasing order),
    /// `current` having run last, and having `yielded` (its last step gave up a try: the others
    /// should go first); nil if the schedule can't go on (a replayed choice that can't).
    mutating func choose(at index: Int, enabled: [Int], current: Int?, yielded: Bool) -> Int?
}

extension ScheduleChooser {
    /// `choose(at:enabled:current:yielded:)` after a step that didn't yield.
    mutating func choose(at index: Int, enabled: [Int], current: Int?) -> Int? {
        choose(at: index, enabled: enabled, current: current, yielded: false)
    }
}

/// Who goes first once `current` has yielded: the others, if any can go on.
func othersFirst(_ enabled: [Int], after current: Int?, yielded: Bool) -> [Int] {
    guard yielded, let current, enabled.contains(where: { $0 != current }) else { return enabled }
    return enabled.filter { $0 != current }
}

/// Follows `prefix`, then never preempts: the entity that ran last while it can go on and hasn't
/// yielded, otherwise the lowest-numbered one that can (another than one that yielded, if any).
struct PrefixChooser: ScheduleChooser {
    let prefix: [Int]

    mutating func choose(at index: Int, enabled: [Int], current: Int?, yielded: Bool) -> Int? {
        if index < prefix.count { return enabled.contains(prefix[index]) ? prefix[index] : nil }
        if let current, enabled.contains(current), !yielded { return current }
        return othersFirst(enabled, after: current, yielded: yielded).first
    }
}

/// One switch point of an execution, as the search sees it.
struct Decision: Sendable {
    let enabled: [Int]
    let current: Int?
    /// Whether `current`'s last step gave up a try: then switching away from it is free.
    var yielded = false
    let chosen: Int
    /// Preemptions before this switch point.
    let preemptionsBefore: Int
    /// The state the execution was in.
    let key: TraceKey
    /// How many steps the execution had taken: the state's trace is its first `stepsBefore` steps.
    let stepsBefore: Int

    /// Whether choosing `entity` here departs from the schedule without preemptions: stops the
    /// thread that ran last while it could go on, or runs it again after it yielded.
    ///
    /// A thread that gave up a try (`...IfAvailable` finding the instance held), or polled again
    /// what it polled last, yields, as a thread that spins would to the others on a real machine:
    /// the others go first, for free, and running it again instead is what costs a preemption.
    /// Without this, a thread that spins until another gets on would spin for ever once the bound
    /// is spent (CHESS's fair scheduling, Musuvathi and Qadeer, PLDI 2008, treats yields so).
    func preempts(for entity: Int) -> Bool {
        guard let current, enabled.contains(current) else { return false }
        guard yielded else { return entity != current }
        return entity == current && enabled.contains { $0 != current }
    }
}

/// Every schedule of a scenario with at most `bound` preemptions, fewest preemptions first, each
/// set of schedules that differ only in the order of independent steps run once.
///
/// **Preemption bounding** (CHESS's iterative context bounding, Musuvathi and Qadeer, PLDI 2007).
/// A switch point is a *preemption* when the thread that ran last could have gone on and another
/// runs instead; switching when it can't (it waits, or finished) is free. Most concurrency bugs
/// need one or two preemptions, and the number of schedules grows polynomially in the number of
/// steps for a fixed bound, exponentially in the bound. The search runs in rounds: round *k* runs
/// the schedules with exactly *k* preemptions, depth first, and puts each alternative that would
/// add a preemption in round *k + 1*'s queue. So the first failing schedule found has the fewest
/// preemptions any failing schedule of the scenario has: it is already minimized.
///
/// **Partial-order reduction**, by trace caching. Each switch point's state is identified by a
/// ``TraceKey``: the steps so far in one canonical order of their trace (steps that touch different
/// instances, or only read the same one, and don't order an operation's return before another's
/// call, commute), and the thread that ran last. Schedules that only reorder independent steps
/// reach the same key, and so the same state, with every thread where it was. When a schedule
/// reaches a key already explored with no more preemptions spent, everything from there on was
/// explored already, and the search generates no alternatives past it: a subtree that would
/// repeat another's interleavings isn't run. This, rather than sleep sets, because sleep sets cut
/// branches whose equivalent schedule can need more preemptions than the bound allows, and then
/// miss it (Coons, Musuvathi and McKinley, OOPSLA 2013); a cached state explored with no more
/// preemptions spent has at least as much of the bound left.
///
/// The order is fixed: the same scenario gives the same schedules, in the same order.
struct SystematicSearch {
    let bound: Int
    /// Whether schedules that only reorder independent steps of others are skipped: off only to
    /// check, in the tests, that skipping them loses no execution.
    var reducing = true
    private var round = 0
    /// The current round's prefixes still to run, depth first.
    private var stack: [[Int]] = [[]]
    /// Later rounds' prefixes, by preemptions.
    private var later: [[[Int]]]
    /// How many schedules weren't run because they would only have reordered independent steps of
    /// schedules that ran (each with everything it would have started).
    private(set) var skipped = 0
    /// The states explored, with the fewest preemptions any schedule reached them with.
    private var visited: [TraceKey: Int] = [:]
    /// The same, whichever thread ran last.
    private var visitedByAnyThread: [[Int]: Int] = [:]
    /// The step each entity took from each state explored, where a schedule took one.
    private var taken: [TraceKey: [Int: ScheduleStep]] = [:]

    init(bound: Int) {
        self.bound = bound
        later = Array(repeating: [], count: bound + 1)
    }

    /// The prefix of the next schedule to run (after it, the schedule doesn't preempt), or nil
    /// once every schedule within the bound ran.
    mutating func next() -> [Int]? {
        while stack.isEmpty {
            round += 1
            guard round <= bound else { return nil }
            stack = later[round].reversed()
            later[round] = []
        }
        return stack.popLast()
    }

    /// Learns from the schedule that `prefix` started, which took `decisions` and `steps`: the
    /// alternatives at its switch points past the prefix, until one reached a state already explored.
    mutating func explored(_ prefix: [Int], _ decisions: [Decision], _ steps: [ScheduleStep]) {
        var sameRound: [[Int]] = []
        for index in decisions.indices {
            let decision = decisions[index]
            guard index >= prefix.count else { continue }
            if reducing, isExplored(decision.key, with: decision.preemptionsBefore) {
                skipped += decisions[index...].reduce(0) { $0 + alternatives(at: $1) }
                break
            }
            visit(decision.key, with: decision.preemptionsBefore)
            taken[decision.key, default: [:]][decision.chosen] = steps[decision.stepsBefore]
            let base = decisions[..<index].map(\.chosen)
            for entity in decision.enabled where entity != decision.chosen {
                let preempting = decision.preempts(for: entity)
                let preemptions = decision.preemptionsBefore + (preempting ? 1 : 0)
                guard preemptions <= bound else { continue }
                if reducing, let step = step(of: entity, at: index, decisions, steps) {
                    let next = decision.key.appending(step, to: steps[..<decision.stepsBefore], current: entity)
                    if isExplored(next, with: preemptions) {
                        skipped += 1
                        continue
                    }
                }
                if preempting {
                    later[preemptions].append(base + [entity])
                } else {
                    sameRound.append(base + [entity])
                }
            }
        }
        // Deepest last, so that it runs first: depth first.
        stack.append(contentsOf: sameRound)
    }

    /// How many schedules the decision's alternatives within the bound would start.
    private func alternatives(at decision: Decision) -> Int {
        decision.enabled.filter { entity in
            entity != decision.chosen && decision.preemptionsBefore + (decision.preempts(for: entity) ? 1 : 0) <= bound
        }.count
    }

    /// Whether the state `key` names was explored with at most `preemptions` spent: with the same
    /// thread last, or with another and a preemption fewer (from there, one preemption can run any
    /// thread first, and the rest goes the same).
    private func isExplored(_ key: TraceKey, with preemptions: Int) -> Bool {
        if let seen = visited[key], seen <= preemptions { return true }
        if let seen = visitedByAnyThread[key.order], seen < preemptions { return true }
        return false
    }

    private mutating func visit(_ key: TraceKey, with preemptions: Int) {
        visited[key] = min(visited[key] ?? .max, preemptions)
        visitedByAnyThread[key.order] = min(visitedByAnyThread[key.order] ?? .max, preemptions)
    }

    /// The step `entity` would take at the `index`th switch point, if a schedule already took it:
    /// the one it took from an earlier state of this execution where it stood where it stands now,
    /// if every step since is independent of it (then it is the same step, in the same state).
    private func step(
        of entity: Int, at index: Int, _ decisions: [Decision], _ steps: [ScheduleStep]
    )
        -> ScheduleStep?
    {
        var earlier = index
        while earlier >= 0 {
            if earlier < index, decisions[earlier].chosen == entity { return nil }
            if let step = taken[decisions[earlier].key]?[entity] {
                let since = steps[decisions[earlier].stepsBefore..<decisions[index].stepsBefore]
                return since.allSatisfy { !$0.depends(on: step) } ? step : nil
            }
            earlier -= 1
        }
        return nil
    }
}

/// PCT, the probabilistic concurrency testing of Burckhardt, Kothari, Musuvathi and Nagarakatte
/// (ASPLOS 2010), for scenarios too large to explore exhaustively: every thread gets a random
/// priority, the highest that can go on always runs, and at `depth - 1` random switch points the
/// thread about to run drops below all others. A bug that needs `depth` ordering constraints among
/// `n` threads over `k` steps is found by each schedule with probability at least 1/(n·k^(depth-1)).
///
/// The guarantee needs each of the `depth - 1` change points to take effect: they are drawn
/// without repeats (fewer only when there are fewer switch points), and one whose switch point
/// finds the last thread unable to go on drops the thread that runs instead.
struct PriorityChooser: ScheduleChooser {
    private var random: SplitMix64
    private var priorities: [Int: Int]
    /// The change points: switch point → the priority the thread about to run drops to, 1 for the
    /// first drawn, up to `depth - 1`.
    let changes: [Int: Int]
    private let depth: Int

    /// `seed` chooses the priorities and the change points, among the first `steps` switch points.
    init(seed: UInt64, depth: Int, steps: Int) {
        random = SplitMix64(seed: seed)
        self.depth = max(depth, 1)
        priorities = [:]
        var changes: [Int: Int] = [:]
        let count = min(self.depth - 1, max(steps, 1))
        while changes.count < count {
            let point = Int.random(in: 0..<max(steps, 1), using: &random)
            if changes[point] == nil { changes[point] = changes.count + 1 }
        }
        self.changes = changes
    }

    /// A chooser with these priorities and change points, for tests.
    init(priorities: [Int: Int], changes: [Int: Int], depth: Int) {
        random = SplitMix64(seed: 0)
        self.priorities = priorities
        self.changes = changes
        self.depth = depth
    }

    mutating func choose(at index: Int, enabled: [Int], current: Int?, yielded: Bool) -> Int? {
        // Entities appear as they start (drains, when work is submitted): each gets a random
        // priority above every change point's.
        for entity in enabled where priorities[entity] == nil {
            priorities[entity] = depth + Int.random(in: 0..<1 << 30, using: &random)
        }
        // A thread that yielded lets the others go first, whatever its priority.
        let candidates = othersFirst(enabled, after: current, yielded: yielded)
        guard let first = highest(of: candidates) else { return nil }
        guard let level = changes[index] else { return first }
        priorities[first] = level
        return highest(of: candidates)
    }

    private func highest(of enabled: [Int]) -> Int? {
        enabled.max { priorities[$0]! < priorities[$1]! }
    }
}
