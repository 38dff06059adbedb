import Foundation
import Testing

/// A task executor with threads of its own: a task that prefers it runs there, apart from the
/// cooperative pool that every other test's tasks share.
///
/// A loop under test that is broken so that it never suspends holds the thread it runs on; on the
/// shared pool (two threads on a two-core machine) that stalls every other test's tasks, and the
/// limits that run on them. Here it holds only its own thread. And a consumer that must get going
/// (to take a first value, to start waiting) gets a thread at once, however busy the pool is.
public final class DedicatedThread: TaskExecutor, @unchecked Sendable {
    // @unchecked: _jobs and _finished are only touched while _condition is locked.
    private let _condition = NSCondition()
    private var _jobs: [UnownedJob] = []
    private var _finished = false

    /// Starts `count` threads, which take the jobs enqueued here in turn.
    public init(count: Int = 1, name: String = "test: dedicated thread") {
        for _ in 0..<count {
            let thread = Thread { [self] in run() }
            thread.name = name
            thread.start()
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        _condition.lock()
        guard !_finished else {
            _condition.unlock()
            // A task that outlived the test that started it: its threads may have ended, and a job
            // left in the queue would never run.
            let executor = asUnownedTaskExecutor()
            Thread { job.runSynchronously(on: executor) }.start()
            return
        }
        _jobs.append(job)
        _condition.signal()
        _condition.unlock()
    }

    /// Lets the threads end once the jobs enqueued so far have run; a job enqueued later runs on a
    /// thread started for it.
    public func finish() {
        _condition.lock()
        _finished = true
        _condition.broadcast()
        _condition.unlock()
    }

    /// The executor whose thread this is, if it is one of a `DedicatedThread`'s.
    public static var current: DedicatedThread? {
        Thread.current.threadDictionary[currentKey] as? DedicatedThread
    }

    private static let currentKey = "ExclusionTestSupport.DedicatedThread"

    private func run() {
        Thread.current.threadDictionary[Self.currentKey] = self
        defer { Thread.current.threadDictionary[Self.currentKey] = nil }
        while true {
            _condition.lock()
            while _jobs.isEmpty && !_finished { _condition.wait() }
            if _jobs.isEmpty {
                _condition.unlock()
                return
            }
            let job = _jobs.removeFirst()
            _condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs `body` in a task on a `DedicatedThread` of its own, which ends with it: for a consumer
/// loop under test (`for await value in ...`), so that it neither waits for nor holds a thread of
/// the shared pool. Cancel or await the task as any other.
@discardableResult
public func onADedicatedThread<R: Sendable>(_ body: sending @escaping () async -> R) -> Task<R, Never> {
    let thread = DedicatedThread()
    return Task(executorPreference: thread) {
        defer { thread.finish() }
        return await body()
    }
}

/// `onADedicatedThread` for a body that throws.
@discardableResult
public func onADedicatedThread<R: Sendable>(_ body: sending @escaping () async throws -> R) -> Task<R, any Error> {
    let thread = DedicatedThread()
    return Task(executorPreference: thread) {
        defer { thread.finish() }
        return try await body()
    }
}

/// A trait that runs each test, and its child tasks (`async let`, task groups: they inherit its
/// executor preference), on threads of its own instead of the cooperative pool's: as many as the
/// pool has, so that a test keeps the parallelism it was written for. Unstructured tasks (`Task {}`,
/// `Task.detached`) still run on the shared pool.
///
/// For suites whose tests compute for long (explorations, linearizability checks, simulations,
/// properties): on the shared pool, two such tests are every thread a two-core machine has, and
/// under ThreadSanitizer they hold them for minutes, while every other test's tasks, and the main
/// queue that the pool drains, wait for one. On threads of their own they get their share of the
/// processors from the system's scheduler, as every other thread does.
///
/// As many such tests run at once as the machine has cores; the others wait for their turn,
/// suspended, before they start. Let all of them run at once and each thread gets a sliver of the
/// processors, the pool's threads and the timers' among them: every test, not only these, then
/// runs many times slower than it would one after the other, and limits fire late
/// (Verification/README.md, "Under load").
public struct ThreadsOfItsOwnTrait: SuiteTrait, TestTrait, TestScoping {
    private static let turns = Turns(ProcessInfo.processInfo.activeProcessorCount)

    public var isRecursive: Bool { true }

    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        await Self.turns.take()
        defer { Self.turns.giveBack() }
        let threads = DedicatedThread(
            count: ProcessInfo.processInfo.activeProcessorCount, name: "test: \(test.name)")
        defer { threads.finish() }
        try await withTaskExecutorPreference(threads, operation: function)
    }
}

extension Trait where Self == ThreadsOfItsOwnTrait {
    /// Runs each test on threads of its own, apart from the shared pool: see `ThreadsOfItsOwnTrait`.
    public static var onThreadsOfItsOwn: Self { Self() }
}

/// Turns for at most `count` holders at once; the others wait, suspended, in the order they came.
private final class Turns: @unchecked Sendable {
    // @unchecked: _free and _waiting are only touched while _lock is held (NSLock, not Mutex: see
    // Threads.swift).
    private let _lock = NSLock()
    private var _free: Int
    private var _waiting: [CheckedContinuation<Void, Never>] = []

    init(_ count: Int) {
        _free = count
    }

    func take() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            _lock.lock()
            guard _free > 0 else {
                _waiting.append(continuation)
                _lock.unlock()
                return
            }
            _free -= 1
            _lock.unlock()
            continuation.resume()
        }
    }

    func giveBack() {
        _lock.lock()
        guard !_waiting.isEmpty else {
            _free += 1
            _lock.unlock()
            return
        }
        let next = _waiting.removeFirst()
        _lock.unlock()
        next.resume()
    }
}
