import Foundation

/// A task executor with a thread of its own: a task that prefers it runs there, apart from the
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

    public init() {
        let thread = Thread { [self] in run() }
        thread.name = "test: dedicated thread"
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        _condition.lock()
        _jobs.append(job)
        _condition.signal()
        _condition.unlock()
    }

    /// Lets the thread end once the jobs enqueued so far have run.
    public func finish() {
        _condition.lock()
        _finished = true
        _condition.signal()
        _condition.unlock()
    }

    private func run() {
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
