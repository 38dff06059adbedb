@_spi(ScheduleExploration) import Exclusion
import Foundation
import Synchronization

/// The Swift runtime's hooks that bring to the explorer the jobs that don't go to an executor the
/// scenario's tasks prefer: those of the main actor, and those of the global executor (tasks
/// made with `Task { }` or `Task.detached`, and the actors they call).
///
/// The runtime asks a hook, if one is set, where it would otherwise decide itself: for the main
/// executor (`swift_task_getMainExecutor_hook`), and to enqueue a job on the global executor
/// (`swift_task_enqueueGlobal_hook`). The explorer sets both once, for the rest of the process,
/// and they answer by the calling thread: on a thread the explorer runs, with the execution's
/// stand-ins; on any other thread, as the runtime would have (or a hook set before ours), except
/// for a job of a task the explorer runs that comes back from outside (a timer's, a callback's),
/// which goes to its execution. So explorations can run side by side, and code outside them goes
/// its own way, for the price of one thread-local read per main-actor hop and global job.
///
/// The hooks are the runtime's own variables, found with `dlsym`; a runtime without one (an older
/// Apple runtime) leaves what it would bring unexplored.
enum RuntimeHooks {
    /// Sets the hooks, once per process.
    static func install() {
        _ = installed
    }

    private static let installed: Void = {
        if let address = runtimeVariable("swift_task_getMainExecutor_hook") {
            let hook = address.assumingMemoryBound(to: MainExecutorHook?.self)
            previousMainExecutorHook.store(unsafeBitCast(hook.pointee, to: UInt.self), ordering: .releasing)
            hook.pointee = { original in mainExecutor(original) }
        }
        if let address = runtimeVariable("swift_task_enqueueGlobal_hook") {
            let hook = address.assumingMemoryBound(to: EnqueueGlobalHook?.self)
            previousEnqueueGlobalHook.store(unsafeBitCast(hook.pointee, to: UInt.self), ordering: .releasing)
            hook.pointee = { job, original in enqueueGlobal(job, original) }
        }
    }()

    private static func runtimeVariable(_ name: String) -> UnsafeMutableRawPointer? {
        #if canImport(Darwin)
        dlsym(UnsafeMutableRawPointer(bitPattern: -2), name)  // RTLD_DEFAULT
        #else
        dlsym(nil, name)  // RTLD_DEFAULT
        #endif
    }

    /// Hooks that were set before ours, as the bits of their addresses (0 for none): ours hand
    /// them what isn't the explorer's. Atomic: the runtime, which hands our hook to other
    /// threads, is no synchronization a race detector sees.
    private static let previousMainExecutorHook = Atomic<UInt>(0)
    private static let previousEnqueueGlobalHook = Atomic<UInt>(0)

    /// The hook set before ours, if one was.
    fileprivate static var mainExecutorHookBefore: MainExecutorHook? {
        unsafeBitCast(previousMainExecutorHook.load(ordering: .acquiring), to: MainExecutorHook?.self)
    }

    fileprivate static var enqueueGlobalHookBefore: EnqueueGlobalHook? {
        unsafeBitCast(previousEnqueueGlobalHook.load(ordering: .acquiring), to: EnqueueGlobalHook?.self)
    }

    /// The tasks started on the global executor by explored threads, by id, with where they run:
    /// a job of one that comes from outside (a sleep's end, a callback) goes there too, until
    /// its execution ends.
    // nonisolated(unsafe): only touched with `startedGloballyLock` held. A lock ThreadSanitizer
    // sees (`Mutex`'s futex it doesn't), as explorations in parallel tests share it.
    nonisolated(unsafe) private static var tasksStartedGlobally: [UInt64: ScenarioTaskExecutor] = [:]
    private static let startedGloballyLock = NSLock()
    /// Whether `tasksStartedGlobally` has any: most global jobs are asked about none.
    private static let anyStartedGlobally = Atomic<Int>(0)

    /// `task` was started on the global executor by a thread of the execution `tasks` runs.
    static func startedGlobally(_ task: UInt64, on tasks: ScenarioTaskExecutor) {
        startedGloballyLock.withLock { tasksStartedGlobally[task] = tasks }
        anyStartedGlobally.add(1, ordering: .relaxed)
    }

    /// The execution `tasks` runs is over: its tasks' jobs are no longer its.
    static func forget(tasksOf tasks: ScenarioTaskExecutor) {
        let forgotten = startedGloballyLock.withLock {
            let before = tasksStartedGlobally.count
            tasksStartedGlobally = tasksStartedGlobally.filter { $0.value !== tasks }
            return before - tasksStartedGlobally.count
        }
        if forgotten > 0 { anyStartedGlobally.subtract(forgotten, ordering: .relaxed) }
    }

    /// Where a global job from outside the explorer runs, if it is a task the explorer runs.
    fileprivate static func explorer(of job: UnownedJob) -> ScenarioTaskExecutor? {
        guard anyStartedGlobally.load(ordering: .relaxed) > 0, let task = ScenarioTaskExecutor.taskID(of: job) else {
            return nil
        }
        return startedGloballyLock.withLock { tasksStartedGlobally[task] }
    }
}

/// The runtime's way to find the main executor, and a hook around it, in the Swift calling
/// convention with no context (`swift_task_getMainExecutor_original` and its hook).
typealias MainExecutorOriginal = @convention(thin) () -> UnownedSerialExecutor
typealias MainExecutorHook = @convention(thin) (MainExecutorOriginal) -> UnownedSerialExecutor

/// The runtime's way to enqueue a job on the global executor, and a hook around it.
typealias EnqueueGlobalOriginal = @convention(thin) (UnownedJob) -> Void
typealias EnqueueGlobalHook = @convention(thin) (UnownedJob, EnqueueGlobalOriginal) -> Void

/// The main executor, as the calling thread should see it.
private func mainExecutor(_ original: MainExecutorOriginal) -> UnownedSerialExecutor {
    if let controller = EntityController.current, let tasks = controller.entity.executor {
        return tasks.mainActor.asUnownedSerialExecutor()
    }
    return RuntimeHooks.mainExecutorHookBefore.map { $0(original) } ?? original()
}

/// Enqueues a global job: on the execution of the thread the explorer runs that enqueues it, or
/// of the task it belongs to; anywhere else, as the runtime would.
private func enqueueGlobal(_ job: UnownedJob, _ original: EnqueueGlobalOriginal) {
    if let controller = EntityController.current, let tasks = controller.entity.executor {
        tasks.enqueueGlobal(job)
    } else if let tasks = RuntimeHooks.explorer(of: job) {
        tasks.enqueueGlobal(job)
    } else if let previous = RuntimeHooks.enqueueGlobalHookBefore {
        previous(job, original)
    } else {
        original(job)
    }
}
