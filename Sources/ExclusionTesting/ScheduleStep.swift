/// What one step of an execution touched: the unit of the explorer's partial-order reduction.
///
/// A step runs one thread from a switch point to its next: it takes the instance it waited for,
/// runs, and may let go of instances and call or return from operations on the way. Two steps of
/// different threads are *independent* when running them in either order leaves every thread in
/// the same state and gives the same history: they touch no instance in common (or only read it
/// shared), and they don't put an operation's return before another thread's call (which makes
/// the history say one operation came first). Executions that differ only in the order of
/// adjacent independent steps are the same execution (the same Mazurkiewicz trace), and the
/// explorer runs one of them.
struct ScheduleStep: Sendable {
    /// Who ran: a scenario thread's number, or a drain's.
    let entity: Int
    /// The instances touched, numbered in the order the execution first met them, and whether
    /// exclusively.
    var touched: [Int: Bool] = [:]
    /// Whether the step recorded an operation's call, or its return.
    var calls = false
    var returns = false
    /// Whether it may have touched what the explorer can't see (an awaited access that didn't
    /// wait, work submitted while a drain was pending): then it depends on every step.
    var touchesUnseen = false

    init(entity: Int) {
        self.entity = entity
    }

    mutating func touch(_ instance: Int, exclusively: Bool) {
        touched[instance] = (touched[instance] ?? false) || exclusively
    }

    /// Whether the two steps' order matters.
    func depends(on other: ScheduleStep) -> Bool {
        if entity == other.entity || touchesUnseen || other.touchesUnseen { return true }
        if (returns && other.calls) || (calls && other.returns) { return true }
        for (instance, exclusively) in touched {
            if let theirs = other.touched[instance], exclusively || theirs { return true }
        }
        return false
    }
}

/// An execution so far, up to reordering independent steps, and the thread that ran last: what a
/// state of the search is. Two schedules that reach equal keys reach the same state.
struct TraceKey: Hashable, Sendable {
    /// The steps' threads in the trace's lexicographically least order.
    let order: [Int]
    let current: Int?

    /// The key of `steps`: of all the orders that swap only independent steps, the one that runs
    /// the lowest-numbered thread whenever it can.
    init(_ steps: [ScheduleStep], current: Int?) {
        var predecessors = Array(repeating: 0, count: steps.count)
        var successors = Array(repeating: [Int](), count: steps.count)
        for later in steps.indices {
            for earlier in 0..<later where steps[earlier].depends(on: steps[later]) {
                predecessors[later] += 1
                successors[earlier].append(later)
            }
        }
        var ready = steps.indices.filter { predecessors[$0] == 0 }
        var order: [Int] = []
        order.reserveCapacity(steps.count)
        while let next = ready.min(by: { steps[$0].entity < steps[$1].entity }) {
            ready.removeAll { $0 == next }
            order.append(steps[next].entity)
            for successor in successors[next] {
                predecessors[successor] -= 1
                if predecessors[successor] == 0 { ready.append(successor) }
            }
        }
        self.order = order
        self.current = current
    }

    private init(order: [Int], current: Int?) {
        self.order = order
        self.current = current
    }

    /// The same trace, `current` having run last.
    func with(current: Int?) -> TraceKey { TraceKey(order: order, current: current) }

    /// The key of the empty trace.
    static let empty = TraceKey(order: [], current: nil)

    /// The key of `steps` followed by `step`, from this one, the key of `steps`, in time linear in
    /// their number (`init` takes quadratic): the same order, with `step` where the greedy order
    /// puts it. As `step` has no successor, taking it changes nothing the order takes after it:
    /// it goes at the first place after everything it depends on where the step the order takes
    /// has a higher-numbered thread (steps of one thread always depend on each other, so there is
    /// no tie), or last.
    func appending(_ step: ScheduleStep, to steps: ArraySlice<ScheduleStep>, current: Int?) -> TraceKey {
        // The order names threads: the k-th time it names one is that thread's k-th step.
        var stepsOf: [Int: [Int]] = [:]
        for index in steps.indices { stepsOf[steps[index].entity, default: []].append(index) }
        var taken: [Int: Int] = [:]
        var afterLastPredecessor = 0
        for (place, entity) in order.enumerated() {
            let index = stepsOf[entity]![taken[entity, default: 0]]
            taken[entity, default: 0] += 1
            if steps[index].depends(on: step) { afterLastPredecessor = place + 1 }
        }
        let place = order[afterLastPredecessor...].firstIndex { $0 > step.entity } ?? order.endIndex
        var order = order
        order.insert(step.entity, at: place)
        return TraceKey(order: order, current: current)
    }
}
