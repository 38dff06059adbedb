import Foundation

/// Runs `body`, which awaits an exit test (`#expect(processExitsWith:)`), with every task it
/// starts on threads of their own instead of the cooperative pool's.
///
/// Why: Swift Testing waits for an exit test's child process by reading its pipes (its back
/// channel, and its standard error when observed) to the end, in child tasks that block their
/// threads until the process ends. On the shared pool, two such reads are every thread a two-core
/// machine has, so each exit test stalled every other test's tasks for the life of its child
/// process: on a busy machine, many seconds per exit test, and the tests that awaited anything in
/// that time ran past their limits. Child tasks inherit their parent's executor preference, so
/// here each of those reads blocks a thread started for it.
@discardableResult
public func offTheSharedPool<R: Sendable>(_ body: () async -> R) async -> R {
    await withTaskExecutorPreference(ThreadPerJob.shared, operation: body)
}

/// A task executor that runs each job on a new thread: for jobs that block until something
/// outside the process happens, which must neither wait for a thread nor hold one anybody else
/// waits for. A thread costs tens of microseconds to start, so only for jobs that are few.
final class ThreadPerJob: TaskExecutor {
    static let shared = ThreadPerJob()

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        let thread = Thread { job.runSynchronously(on: executor) }
        thread.name = "test: a blocking job"
        thread.start()
    }
}
