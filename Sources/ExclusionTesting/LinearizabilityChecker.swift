/// What a linearizability check found.
public enum LinearizabilityVerdict<Input: Sendable, Output: Sendable>: Sendable {
    /// The operations can be ordered so that the model explains every output.
    case linearizable
    /// No such order exists. The excerpt shows where the search got furthest: the operation it
    /// could not place, the operations overlapping it, and the last one that finished before it.
    case notLinearizable(excerpt: [HistoryOperation<Input, Output>])
    /// The search budget ran out before an answer: neither proof nor counterexample.
    case unknown

    public var isLinearizable: Bool {
        if case .linearizable = self { return true }
        return false
    }
}

/// Decides whether a history is linearizable with respect to a model.
///
/// This is Wing and Gong's search with Lowe's memoization, as the Porcupine and Lincheck checkers
/// use it. Call and return events are kept in one list in time order. The search repeatedly takes
/// the earliest call whose operation the model can apply with the recorded output, lifts it and
/// its return out of the list, and goes on; when a return comes first, no pending operation can
/// be placed before it, so the search backtracks. Each (set of placed operations, model state) is
/// tried once: a cache cuts the exponential search down to what is reachable.
public struct LinearizabilityChecker<Model: SequentialModel> {
    public typealias Operation = HistoryOperation<Model.Input, Model.Output>

    public let model: Model
    /// How many search steps a check may take before it answers ``LinearizabilityVerdict/unknown``.
    public let budget: Int

    public init(model: Model, budget: Int = 1_000_000) {
        self.model = model
        self.budget = budget
    }

    public func check(_ history: [Operation]) -> LinearizabilityVerdict<Model.Input, Model.Output> {
        var events = EventList(history)
        var placed = BitSet(count: history.count)
        var state = model.initialState
        var stack: [(entry: Int, state: Model.State)] = []
        var seen: Set<CacheKey> = [CacheKey(placed: placed, state: state)]
        var deepest = (depth: -1, blocker: 0)
        var steps = 0

        var entry = events.first
        while let current = entry {
            steps += 1
            if steps > budget { return .unknown }
            let event = events.event(current)
            if event.isCall {
                let operation = history[event.operation]
                let (output, next) = model.step(state, operation.input)
                var tried = placed
                tried.insert(event.operation)
                if output == operation.output, seen.insert(CacheKey(placed: tried, state: next)).inserted {
                    stack.append((current, state))
                    state = next
                    placed = tried
                    events.lift(current)
                    entry = events.first
                } else {
                    entry = events.next(current)
                }
            } else {
                // A return comes before any pending call could be placed: undo the last placement.
                if stack.count > deepest.depth { deepest = (stack.count, event.operation) }
                guard let last = stack.popLast() else {
                    return .notLinearizable(excerpt: excerpt(history, deepest.blocker))
                }
                state = last.state
                placed.remove(events.event(last.entry).operation)
                events.unlift(last.entry)
                entry = events.next(last.entry)
            }
        }
        return .linearizable
    }

    /// Where the search got stuck: the operation it could not place, every operation overlapping
    /// it (which could have gone either side of it), and the last one to finish before it began
    /// (which had to go before it), in call order.
    private func excerpt(_ history: [Operation], _ blocker: Int) -> [Operation] {
        let blocking = history[blocker]
        var indices = history.indices.filter { index in
            index == blocker || (history[index].call < blocking.return && history[index].return > blocking.call)
        }
        let before = history.indices.filter { history[$0].return < blocking.call }
        if let previous = before.max(by: { history[$0].return < history[$1].return }) { indices.append(previous) }
        return indices.sorted { history[$0].call < history[$1].call }.map { history[$0] }
    }

    private struct CacheKey: Hashable {
        let placed: BitSet
        let state: Model.State
    }
}

/// Which operations are placed, as bits.
struct BitSet: Hashable {
    private var words: [UInt64]

    init(count: Int) {
        words = Array(repeating: 0, count: (count + 63) / 64)
    }

    mutating func insert(_ index: Int) { words[index / 64] |= 1 << UInt64(index % 64) }
    mutating func remove(_ index: Int) { words[index / 64] &= ~(1 << UInt64(index % 64)) }
}

/// Call and return events in time order, as a doubly linked list over arrays, with O(1) lifting
/// of an operation's two events and putting them back.
struct EventList {
    struct Event {
        let operation: Int
        let isCall: Bool
        let time: UInt64
    }

    private var events: [Event]
    /// For a call, the index of its return.
    private var match: [Int]
    // Index `events.count` is the head sentinel.
    private var previous: [Int]
    private var following: [Int]

    init<Input, Output>(_ history: [HistoryOperation<Input, Output>]) {
        var all: [Event] = []
        for (index, operation) in history.enumerated() {
            all.append(Event(operation: index, isCall: true, time: operation.call))
            all.append(Event(operation: index, isCall: false, time: operation.return))
        }
        all.sort { $0.time < $1.time || ($0.time == $1.time && $0.isCall && !$1.isCall) }
        events = all
        match = Array(repeating: -1, count: all.count)
        var callOf: [Int: Int] = [:]
        for (position, event) in all.enumerated() {
            if event.isCall {
                callOf[event.operation] = position
            } else if let call = callOf[event.operation] {
                match[call] = position
            }
        }
        let head = all.count
        previous = (0...all.count).map { $0 == head ? -1 : ($0 == 0 ? head : $0 - 1) }
        following = (0...all.count).map { $0 == head ? (all.isEmpty ? -1 : 0) : ($0 + 1 < all.count ? $0 + 1 : -1) }
    }

    var first: Int? { following[events.count] >= 0 ? following[events.count] : nil }

    func next(_ entry: Int) -> Int? { following[entry] >= 0 ? following[entry] : nil }

    func event(_ entry: Int) -> Event { events[entry] }

    /// Takes a call and its return out of the list.
    mutating func lift(_ call: Int) {
        unlink(match[call])
        unlink(call)
    }

    /// Puts back what `lift` took out, in reverse order.
    mutating func unlift(_ call: Int) {
        relink(call)
        relink(match[call])
    }

    private mutating func unlink(_ entry: Int) {
        following[previous[entry]] = following[entry]
        if following[entry] >= 0 { previous[following[entry]] = previous[entry] }
    }

    private mutating func relink(_ entry: Int) {
        following[previous[entry]] = entry
        if following[entry] >= 0 { previous[following[entry]] = entry }
    }
}
