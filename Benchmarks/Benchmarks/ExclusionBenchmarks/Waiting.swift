import Benchmark
import Dispatch
import Exclusion
import Foundation
import Synchronization

// Waiting for state: a bounded producer/consumer queue, and how soon a waiter runs after the change
// it waits for. Each design is the one its documentation teaches: `Exclusive` with conditional
// access; `NSCondition` with a `while` loop around `wait()` and a broadcast after each change;
// counting `DispatchSemaphore`s for free and filled slots around a lock.

/// A fixed-capacity FIFO of integers, the same in every design.
struct Ring: Sendable {
    private var slots: [Int]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int) { slots = Array(repeating: 0, count: capacity) }

    var isEmpty: Bool { count == 0 }
    var isFull: Bool { count == slots.count }

    mutating func push(_ value: Int) {
        slots[(head + count) % slots.count] = value
        count += 1
    }

    mutating func pop() -> Int {
        let value = slots[head]
        head = (head + 1) % slots.count
        count -= 1
        return value
    }
}

/// The queue's capacity, and how many items one benchmark iteration moves through it.
let queueCapacity = 64
let itemsPerIteration = 100_000

/// A bounded queue that producers and one consumer share.
protocol BoundedQueue: Sendable {
    func put(_ value: Int)
    func take() -> Int
}

struct ExclusiveQueue: BoundedQueue {
    let ring = Exclusive(Ring(capacity: queueCapacity), label: "queue")

    func put(_ value: Int) {
        try! ring.access(when: { !$0.isFull }) { $0.push(value) }
    }

    func take() -> Int {
        try! ring.access(when: { !$0.isEmpty }) { $0.pop() }
    }
}

final class ConditionQueue: BoundedQueue, @unchecked Sendable {
    // @unchecked: ring is only touched while condition is locked.
    private let condition = NSCondition()
    private var ring = Ring(capacity: queueCapacity)

    func put(_ value: Int) {
        condition.lock()
        while ring.isFull { condition.wait() }
        ring.push(value)
        condition.broadcast()
        condition.unlock()
    }

    func take() -> Int {
        condition.lock()
        while ring.isEmpty { condition.wait() }
        let value = ring.pop()
        condition.broadcast()
        condition.unlock()
        return value
    }
}

final class SemaphoreQueue: BoundedQueue, @unchecked Sendable {
    // @unchecked: ring is only touched while lock is held.
    private let free = DispatchSemaphore(value: queueCapacity)
    private let filled = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var ring = Ring(capacity: queueCapacity)

    func put(_ value: Int) {
        free.wait()
        lock.withLock { ring.push(value) }
        filled.signal()
    }

    func take() -> Int {
        filled.wait()
        let value = lock.withLock { ring.pop() }
        free.signal()
        return value
    }
}

/// Moves `itemsPerIteration` items from `producers` threads to one consumer thread; returns when
/// the consumer has taken the last.
func moveItems(through queue: some BoundedQueue, producers: Int) {
    let done = DispatchGroup()
    let share = itemsPerIteration / producers
    for producer in 0..<producers {
        done.enter()
        Thread {
            for item in 0..<share { queue.put(producer * share + item) }
            done.leave()
        }.start()
    }
    done.enter()
    Thread {
        var sum = 0
        for _ in 0..<(share * producers) { sum &+= queue.take() }
        blackHole(sum)
        done.leave()
    }.start()
    done.wait()
}

// MARK: - Wake-up latency

/// What the waiter of the wake-up benchmark says: that it waits for a round, and that its body
/// for a round has started.
final class WakeUpSignals: Sendable {
    let waiting = Atomic<Int>(0)
    let started = Atomic<Int>(0)
}

/// One design in the wake-up benchmark: a waiter that waits, round after round, for the state to
/// reach the round's number.
protocol WakeUp: Sendable {
    /// Waits until the state is `round`: stores `round` in `signals.waiting` once it is in line
    /// to be woken, and in `signals.started` from its body.
    func waitFor(_ round: Int, _ signals: WakeUpSignals)
    /// Sets the state to `round`.
    func change(to round: Int)
}

struct ExclusiveWakeUp: WakeUp {
    let round = Exclusive(0, label: "round")

    func waitFor(_ target: Int, _ signals: WakeUpSignals) {
        // The condition runs with the state held: once it has said no, this waiter is in line
        // before anyone else can change the state.
        try! round.access(
            when: { value in
                if value != target { signals.waiting.store(target, ordering: .sequentiallyConsistent) }
                return value == target
            }
        ) { _ in signals.started.store(target, ordering: .sequentiallyConsistent) }
    }

    func change(to value: Int) {
        round.access { $0 = value }
    }
}

final class ConditionWakeUp: WakeUp, @unchecked Sendable {
    // @unchecked: round is only touched while condition is locked.
    private let condition = NSCondition()
    private var round = 0

    func waitFor(_ target: Int, _ signals: WakeUpSignals) {
        condition.lock()
        while round != target {
            signals.waiting.store(target, ordering: .sequentiallyConsistent)
            condition.wait()
        }
        signals.started.store(target, ordering: .sequentiallyConsistent)
        condition.unlock()
    }

    func change(to value: Int) {
        condition.lock()
        round = value
        condition.broadcast()
        condition.unlock()
    }
}

/// A waiter thread on `design` that lives for the whole run; each benchmark iteration wakes it
/// once and times the wake-up: from just before the change that satisfies it to the moment its
/// body starts.
///
/// With `settle`, the change comes that long after the waiter said it waits, so that it is asleep
/// by then in either design (an `Exclusive` waiter spins and checks again for about a microsecond
/// before it sleeps); without it, the change comes at once, as in a busy queue.
final class WakeUpRig<Design: WakeUp>: @unchecked Sendable {
    // @unchecked: `round` is only touched by the benchmark's thread.
    private let design: Design
    private let settle: Duration?
    private let signals = WakeUpSignals()
    private var round = 0

    init(_ design: Design, settle: Duration? = nil) {
        self.design = design
        self.settle = settle
        let signals = signals
        Thread {
            for round in 1... { design.waitFor(round, signals) }
        }.start()
    }

    func wakeOnce(_ benchmark: Benchmark) {
        round += 1
        while signals.waiting.load(ordering: .sequentiallyConsistent) != round {}
        if let settle { Thread.sleep(forTimeInterval: Double(settle.components.attoseconds) / 1e18) }
        benchmark.startMeasurement()
        design.change(to: round)
        while signals.started.load(ordering: .sequentiallyConsistent) != round {}
        benchmark.stopMeasurement()
    }
}

func waitingBenchmarks() {
    let moving = Benchmark.Configuration(
        metrics: [.wallClock], timeUnits: .microseconds, scalingFactor: .one, maxDuration: .seconds(3),
        maxIterations: 30)
    for producers in [1, 2] {
        let threads = producers == 1 ? "1 producer" : "2 producers"
        Benchmark("bounded queue, Exclusive.access(when:), \(threads)", configuration: moving) { _ in
            moveItems(through: ExclusiveQueue(), producers: producers)
        }
        Benchmark("peer: bounded queue, NSCondition, \(threads)", configuration: moving) { _ in
            moveItems(through: ConditionQueue(), producers: producers)
        }
        Benchmark("peer: bounded queue, DispatchSemaphore, \(threads)", configuration: moving) { _ in
            moveItems(through: SemaphoreQueue(), producers: producers)
        }
    }

    let waking = Benchmark.Configuration(
        metrics: [.wallClock], timeUnits: .nanoseconds, scalingFactor: .one, maxDuration: .seconds(3),
        maxIterations: 3_000)
    let exclusiveRig = WakeUpRig(ExclusiveWakeUp())
    let conditionRig = WakeUpRig(ConditionWakeUp())
    Benchmark("wake-up, Exclusive.access(when:)", configuration: waking) { benchmark in
        exclusiveRig.wakeOnce(benchmark)
    }
    Benchmark("peer: wake-up, NSCondition", configuration: waking) { benchmark in
        conditionRig.wakeOnce(benchmark)
    }
    let asleep = Duration.microseconds(200)
    let sleepingExclusiveRig = WakeUpRig(ExclusiveWakeUp(), settle: asleep)
    let sleepingConditionRig = WakeUpRig(ConditionWakeUp(), settle: asleep)
    Benchmark("wake-up when asleep, Exclusive.access(when:)", configuration: waking) { benchmark in
        sleepingExclusiveRig.wakeOnce(benchmark)
    }
    Benchmark("peer: wake-up when asleep, NSCondition", configuration: waking) { benchmark in
        sleepingConditionRig.wakeOnce(benchmark)
    }
}
