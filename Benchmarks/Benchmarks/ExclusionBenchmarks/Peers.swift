import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The peers Exclusion is measured against, each guarding the same `Int` counter.

final class NSLockCounter: @unchecked Sendable {
    // @unchecked: value is only touched while lock is held.
    private let lock = NSLock()
    private var value = 0
    func increment() {
        lock.lock()
        value &+= 1
        lock.unlock()
    }
    func withLock(_ body: () -> Void) {
        lock.lock()
        body()
        lock.unlock()
    }
    func update(_ body: (Int) -> Int) {
        lock.lock()
        value = body(value)
        lock.unlock()
    }
}

/// `rounds` steps of a linear congruential generator from `seed`: work the optimizer can't remove.
/// It unrolls and reassociates the steps, so one takes about 0.15 ns on the machines we measure
/// (650 steps ≈ 0.1 µs).
@inline(never)
func busyWork(_ rounds: Int, _ seed: Int) -> Int {
    var value = seed
    for _ in 0..<rounds { value = value &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
    return value
}

final class MutexCounter: Sendable {
    private let value = Mutex(0)
    func increment() { value.withLock { $0 &+= 1 } }
}

/// The textbook serial-queue LEA: `DispatchQueue.sync` per access.
final class SerialQueueCounter: @unchecked Sendable {
    // @unchecked: value is only touched on queue.
    private let queue = DispatchQueue(label: "serial counter")
    private var value = 0
    func increment() { queue.sync { value &+= 1 } }
    func incrementAsync() { queue.async { self.value &+= 1 } }
    func waitForAll() { queue.sync {} }
}

/// The textbook read/write LEA: a concurrent queue, `sync` reads and barrier writes.
final class ConcurrentQueueValue: @unchecked Sendable {
    // @unchecked: value is read in plain blocks and written in barrier blocks on queue.
    private let queue = DispatchQueue(label: "concurrent value", attributes: .concurrent)
    private var value = 0
    func read() -> Int { queue.sync { value } }
    func write() { queue.sync(flags: .barrier) { value &+= 1 } }
}

final class RWLockValue: @unchecked Sendable {
    // @unchecked: value is read under the read lock and written under the write lock.
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>
    private var value = 0
    init() {
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }
    func read() -> Int {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return value
    }
}

actor CounterActor {
    private var value = 0
    func increment() { value &+= 1 }
}

/// Runs `body` on `count` threads started together; returns when all are done.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    let ready = Atomic<Int>(0)
    for index in 0..<count {
        group.enter()
        Thread {
            ready.add(1, ordering: .sequentiallyConsistent)
            while ready.load(ordering: .sequentiallyConsistent) < count { sched_yield() }
            body(index)
            group.leave()
        }.start()
    }
    group.wait()
}
