import Dispatch
import Foundation

/// Threads for executions' entities, each kept once its entity has finished, for the next one,
/// of the same execution or a later one.
///
/// An exploration runs each schedule from the start, on new entities, each on a thread of its
/// own: a new thread for each costs more than a schedule's steps. A thread whose entity has
/// finished waits here a while for the next one, and ends if none comes. A thread whose entity
/// never finishes (it traps, or deadlocks, or waits for what never comes) never comes back, and
/// the pool makes another when it runs short. The threads are Foundation's, with its stack size,
/// each named for the entity it runs (where the platform keeps that long a name: Linux keeps 15
/// bytes); libdispatch's pool isn't fit, as an entity blocks for as long as others run.
final class EntityThreads: @unchecked Sendable {
    // @unchecked: `idle`, and the workers' `next`, are only touched with `lock` held (an
    // `NSLock`, which ThreadSanitizer sees, unlike `Mutex`'s futex).
    /// The pool the explorer uses.
    static let shared = EntityThreads()

    /// How long a thread waits for its next entity before it ends.
    let idleLimit: Duration
    /// The most threads that wait at once.
    let mostIdle: Int

    init(idleLimit: Duration = .seconds(2), mostIdle: Int = 32) {
        self.idleLimit = idleLimit
        self.mostIdle = mostIdle
    }

    /// Runs `body` on a waiting thread, or on a new one, named `name`.
    func run(named name: String, _ body: @escaping @Sendable () -> Void) {
        let waiting = lock.withLock {
            let worker = idle.popLast()
            worker?.next = (name, body)
            return worker
        }
        if let waiting {
            waiting.wake.signal()
            return
        }
        let worker = Worker()
        worker.next = (name, body)
        Thread { [self] in work(on: worker) }.start()
    }

    /// How many threads wait for an entity now.
    var waiting: Int { lock.withLock { idle.count } }

    /// A thread, as it waits for an entity or runs one.
    private final class Worker: @unchecked Sendable {
        // @unchecked: `next` is only touched with the pool's lock held, or before its thread starts.
        let wake = DispatchSemaphore(value: 0)
        var next: (name: String, body: @Sendable () -> Void)?
    }

    private let lock = NSLock()
    private var idle: [Worker] = []

    /// A thread's life: runs its entity, then waits for the next, until none comes in time.
    private func work(on worker: Worker) {
        var name = ""
        while let (named, body) = lock.withLock({ worker.next.take() }) {
            if named != name {
                Thread.current.name = named
                name = named
            }
            body()
            let kept = lock.withLock {
                guard idle.count < mostIdle else { return false }
                idle.append(worker)
                return true
            }
            guard kept else { return }
            guard worker.wake.wait(timeout: .now() + .nanoseconds(nanoseconds(idleLimit))) == .timedOut else {
                continue
            }
            let left = lock.withLock {
                guard let index = idle.firstIndex(where: { $0 === worker }) else { return false }
                idle.remove(at: index)
                return true
            }
            if left { return }
            // Taken just as its wait gave up: the signal is on its way.
            worker.wake.wait()
        }
    }
}
