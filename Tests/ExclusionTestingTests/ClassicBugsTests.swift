import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Foundation
import Testing

// The small concurrency bugs every codebase grows, each written as threads and a check with
// `ScheduleExplorer.explore`, in a synchronous form and an awaited one where both make sense. Each
// is found at the smallest preemption bound that shows it (and passes, exhaustively, at the bound
// below), and its fix passes every schedule at that bound. The numbers of schedules are facts
// about the code, not luck: the search's order is fixed. The article "Exploring schedules" shows
// them as a table, which `theArticlesTableIsWhatTheExplorerFinds` checks.

/// A bug, its fix, and what finding it takes.
struct ClassicBug: Sendable, CustomTestStringConvertible {
    let name: String
    /// The fewest preemptions a failing schedule has.
    let bound: Int
    /// How a failing schedule fails.
    let kind: ScheduleReport<AnyHistory.Input, AnyHistory.Output>.Failure.Kind
    /// Whether it has a synchronous form (a bug between a parent task and its child has only the
    /// awaited one).
    let hasSynchronousForm: Bool
    /// Whether it has an awaited form (a wait for the lock that gives up has only the synchronous
    /// one: an awaited access waits for its turn without a thread, and its timer isn't explored).
    var hasAwaitedForm = true
    var lockOrder: ScheduleExplorer<AnyHistory>.LockOrderChecking = .asExclusionDoes
    /// How long a failing schedule waits for a lost task to be resumed from outside: nothing
    /// outside the explorer resumes a task in these programs, so this only bounds a wait for what
    /// never comes.
    var outsideWaitLimit: Duration = .seconds(1)
    /// The threads and checks: the buggy code, or with `fixed` its fix; awaited, or synchronous.
    let program: @Sendable (_ fixed: Bool, _ awaited: Bool, _ threads: ScheduleThreads) -> Void

    var testDescription: String { name }

    var forms: [Bool] { hasSynchronousForm ? (hasAwaitedForm ? [false, true] : [false]) : [true] }
}

/// What a check found wrong.
struct Broken: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

// In async code, `access` resolves to the awaiting overloads; these reach the synchronous ones.
func sync<State: Sendable, R: Sendable>(
    _ instance: Exclusive<State>, file: StaticString = #fileID, line: UInt = #line, _ body: (inout State) -> R
) -> R {
    instance.access({ body(&$0) }, file: file, line: line)
}

let classicBugs: [ClassicBug] = [
    ClassicBug(name: "an order violation", bound: 0, kind: .threw, hasSynchronousForm: true) {
        fixed, awaited, threads in
        // A configuration read before anyone set it. Thread 1 runs first when nothing preempts.
        let config = Exclusive<Int?>(nil, label: "config")
        if awaited {
            threads.spawn { await config.access { $0 = 42 } }
            threads.spawn {
                let value = fixed ? try await config.access(when: { $0 != nil }) { $0 } : await config.access { $0 }
                if value == nil { throw Broken("read the configuration before it was set") }
            }
        } else {
            threads.spawn { sync(config) { $0 = 42 } }
            threads.spawn {
                let value = fixed ? try config.access(when: { $0 != nil }) { $0 } : sync(config) { $0 }
                if value == nil { throw Broken("read the configuration before it was set") }
            }
        }
    },
    ClassicBug(name: "a check and an act in two accesses", bound: 1, kind: .threw, hasSynchronousForm: true) {
        fixed, awaited, threads in
        // Two threads reserve the same seat: each checks it is free, then takes it.
        let seats = Exclusive([String](), label: "seats")
        for name in ["ann", "bob"] {
            if awaited {
                threads.spawn {
                    if fixed {
                        await seats.access { if !$0.contains("12A") { $0.append("12A") } }
                    } else if await !seats.access({ $0.contains("12A") }) {
                        await seats.access { $0.append("12A") }
                    }
                    _ = name
                }
            } else {
                threads.spawn {
                    if fixed {
                        sync(seats) { if !$0.contains("12A") { $0.append("12A") } }
                    } else if !sync(seats, { $0.contains("12A") }) {
                        sync(seats) { $0.append("12A") }
                    }
                    _ = name
                }
            }
        }
        threads.finally {
            let sold = sync(seats) { $0.count }
            if sold != 1 { throw Broken("seat 12A sold \(sold) times") }
        }
    },
    ClassicBug(
        name: "a flag read in one access and acted on in another", bound: 1, kind: .threw, hasSynchronousForm: true
    ) {
        fixed, awaited, threads in
        // A mailbox that closes: what is put in after it closed is never taken out.
        struct Mailbox: Sendable {
            var closed = false
            var letters: [String] = []
            var delivered: [String] = []
        }
        let box = Exclusive(Mailbox(), label: "mailbox")
        if awaited {
            threads.spawn {
                if fixed {
                    await box.access { if !$0.closed { $0.letters.append("hello") } }
                } else if await !box.access({ $0.closed }) {
                    await box.access { $0.letters.append("hello") }
                }
            }
            threads.spawn {
                await box.access {
                    $0.closed = true
                    $0.delivered = $0.letters
                }
            }
        } else {
            threads.spawn {
                if fixed {
                    sync(box) { if !$0.closed { $0.letters.append("hello") } }
                } else if !sync(box, { $0.closed }) {
                    sync(box) { $0.letters.append("hello") }
                }
            }
            threads.spawn {
                sync(box) {
                    $0.closed = true
                    $0.delivered = $0.letters
                }
            }
        }
        threads.finally {
            let mailbox = sync(box) { $0 }
            if mailbox.letters != mailbox.delivered { throw Broken("a letter went in after the box closed") }
        }
    },
    ClassicBug(name: "a stop racing a start that waits", bound: 0, kind: .deadlock, hasSynchronousForm: true) {
        fixed, awaited, threads in
        // A worker starts, then waits to be told to stop; a stop that comes before the start finds
        // nothing running and tells nobody, and the worker waits for ever.
        struct Worker: Sendable {
            var running = false
            var stopRequested = false
        }
        let worker = Exclusive(Worker(), label: "worker")
        if awaited {
            threads.spawn {
                await worker.access { $0.running = true }
                try await worker.access(when: { $0.stopRequested }) { $0.running = false }
            }
            threads.spawn {
                let running = fixed ? true : await worker.access { $0.running }
                if running { await worker.access { $0.stopRequested = true } }
            }
        } else {
            threads.spawn {
                sync(worker) { $0.running = true }
                try worker.access(when: { $0.stopRequested }) { $0.running = false }
            }
            threads.spawn {
                if fixed || sync(worker, { $0.running }) { sync(worker) { $0.stopRequested = true } }
            }
        }
    },
    ClassicBug(
        name: "two instances nested in opposite orders, a deadlock", bound: 1, kind: .deadlock,
        hasSynchronousForm: true, lockOrder: .never
    ) { fixed, awaited, threads in
        opposite(fixed: fixed, awaited: awaited, threads)
    },
    ClassicBug(
        name: "two instances nested in opposite orders, an inversion", bound: 0, kind: .lockOrderInversion,
        hasSynchronousForm: true, lockOrder: .always
    ) { fixed, awaited, threads in
        opposite(fixed: fixed, awaited: awaited, threads)
    },
    ClassicBug(name: "a cancel that lands after the end", bound: 2, kind: .threw, hasSynchronousForm: true) {
        fixed, awaited, threads in
        // A job runs in two steps, starting then finishing (unless it was cancelled meanwhile); a
        // canceller checks that it runs in one access and cancels it in another. It marks a
        // finished job cancelled only if it checks while the job runs (after the start: the job's
        // thread must go first and stop there, one preemption) and cancels after the finish
        // (another).
        enum State: Sendable { case idle, running, done, cancelled }
        struct Job: Sendable {
            var state = State.idle
            var output: Int?
        }
        let job = Exclusive(Job(), label: "job")
        if awaited {
            threads.spawn {
                await job.access { $0.state = .running }
                await job.access {
                    guard $0.state == .running else { return }
                    $0.state = .done
                    $0.output = 42
                }
            }
            threads.spawn {
                if fixed {
                    await job.access { if $0.state == .running { $0.state = .cancelled } }
                } else if await job.access({ $0.state == .running }) {
                    await job.access { $0.state = .cancelled }
                }
            }
        } else {
            threads.spawn {
                sync(job) { $0.state = .running }
                sync(job) {
                    guard $0.state == .running else { return }
                    $0.state = .done
                    $0.output = 42
                }
            }
            threads.spawn {
                if fixed {
                    sync(job) { if $0.state == .running { $0.state = .cancelled } }
                } else if sync(job, { $0.state == .running }) {
                    sync(job) { $0.state = .cancelled }
                }
            }
        }
        threads.finally {
            let ended = sync(job) { $0 }
            if ended.state == .cancelled, ended.output != nil { throw Broken("a finished job was marked cancelled") }
        }
    },
    ClassicBug(name: "a lost update through a child task", bound: 1, kind: .threw, hasSynchronousForm: false) {
        fixed, _, threads in
        // A task counts with a child task beside it (`async let`), each reading the count in one
        // access and writing it in another.
        let count = Exclusive(0, label: "count")
        @Sendable func bump() async {
            if fixed {
                await count.access { $0 += 1 }
            } else {
                let seen = await count.access { $0 }
                await count.access { $0 = seen + 1 }
            }
        }
        threads.spawn {
            async let child: Void = bump()
            await bump()
            await child
        }
        threads.finally {
            let total = sync(count) { $0 }
            if total != 2 { throw Broken("counted \(total), not 2") }
        }
    },
    ClassicBug(name: "a crash after a check in another access", bound: 1, kind: .crashed, hasSynchronousForm: true) {
        fixed, awaited, threads in
        // Two consumers take the last job: each checks there is one, then removes it.
        let jobs = Exclusive(["send invoices"], label: "jobs")
        for _ in 0..<2 {
            if awaited {
                threads.spawn {
                    if fixed {
                        _ = await jobs.access { $0.popLast() }
                    } else if await jobs.access({ !$0.isEmpty }) {
                        _ = await jobs.access { $0.removeFirst() }
                    }
                }
            } else {
                threads.spawn {
                    if fixed {
                        _ = sync(jobs) { $0.popLast() }
                    } else if sync(jobs, { !$0.isEmpty }) {
                        _ = sync(jobs) { $0.removeFirst() }
                    }
                }
            }
        }
    },
    ClassicBug(name: "a cache filled twice", bound: 1, kind: .threw, hasSynchronousForm: true) {
        fixed, awaited, threads in
        // The shape of actor reentrancy: look up, miss, compute, store; two callers both miss.
        struct Cache: Sendable {
            var values: [String: Int] = [:]
            var computed = 0
        }
        let cache = Exclusive(Cache(), label: "cache")
        for _ in 0..<2 {
            if awaited {
                threads.spawn {
                    if fixed {
                        await cache.access {
                            if $0.values["rate"] == nil {
                                $0.values["rate"] = 7
                                $0.computed += 1
                            }
                        }
                    } else if await cache.access({ $0.values["rate"] }) == nil {
                        await cache.access {
                            $0.values["rate"] = 7
                            $0.computed += 1
                        }
                    }
                }
            } else {
                threads.spawn {
                    if fixed {
                        sync(cache) {
                            if $0.values["rate"] == nil {
                                $0.values["rate"] = 7
                                $0.computed += 1
                            }
                        }
                    } else if sync(cache, { $0.values["rate"] }) == nil {
                        sync(cache) {
                            $0.values["rate"] = 7
                            $0.computed += 1
                        }
                    }
                }
            }
        }
        threads.finally {
            let computed = sync(cache) { $0.computed }
            if computed != 1 { throw Broken("computed \(computed) times") }
        }
    },
    ClassicBug(name: "a read that decides a write", bound: 1, kind: .threw, hasSynchronousForm: true) {
        fixed, awaited, threads in
        // A readers-writer list of at most two: each thread reads the count, then writes.
        let list = ReadersWriter(["a"], label: "list")
        for item in ["b", "c"] {
            if awaited {
                threads.spawn {
                    if fixed {
                        await list.write { if $0.count < 2 { $0.append(item) } }
                    } else if await list.read({ $0.count }) < 2 {
                        await list.write { $0.append(item) }
                    }
                }
            } else {
                threads.spawn {
                    if fixed {
                        list.write { if $0.count < 2 { $0.append(item) } }
                    } else if list.read({ $0.count }) < 2 {
                        list.write { $0.append(item) }
                    }
                }
            }
        }
        threads.finally {
            let count = list.read { $0.count }
            if count > 2 { throw Broken("\(count) items in a list of at most 2") }
        }
    },
    ClassicBug(
        name: "a wait for a condition while holding another instance", bound: 0, kind: .deadlock,
        hasSynchronousForm: true
    ) {
        fixed, awaited, threads in
        // Thread 1 waits for a flag inside an access of "door"; the flag's setter needs "door" first.
        let door = Exclusive(0, label: "door")
        let flag = Exclusive(false, label: "flag")
        if awaited {
            threads.spawn {
                await door.access { $0 += 1 }; await flag.access { $0 = true }
            }
        } else {
            threads.spawn {
                sync(door) { $0 += 1 }
                sync(flag) { $0 = true }
            }
        }
        threads.spawn {
            if fixed {
                _ = try flag.access(when: { $0 }) { $0 }
                sync(door) { $0 += 1 }
            } else {
                sync(door) { _ in _ = try? flag.access(when: { $0 }) { $0 } }
            }
        }
    },
    ClassicBug(
        name: "a time-out that leaves its charge behind", bound: 1, kind: .threw, hasSynchronousForm: true,
        hasAwaitedForm: false
    ) { fixed, _, threads in
        // A purchase records its charge, then waits a while for the account, and gives up if
        // another purchase holds it that long: the charge stays, without the money. Found only if
        // the wait's time limit can pass while the account is held.
        let account = Exclusive(100, label: "account")
        let charges = Exclusive([Int](), label: "charges")
        threads.spawn {
            sync(account) { balance in
                sync(charges) { $0.append(30) }
                balance -= 30
            }
        }
        threads.spawn {
            if !fixed { sync(charges) { $0.append(30) } }
            do {
                try account.access(when: { $0 >= 30 }, timeout: .seconds(60)) { $0 -= 30 }
                if fixed { sync(charges) { $0.append(30) } }
            } catch {
                // Gave up: the purchase didn't happen.
            }
        }
        threads.finally {
            let balance = sync(account) { $0 }
            let charged = sync(charges) { $0.reduce(0, +) }
            if charged != 100 - balance { throw Broken("charged \(charged), but the account paid \(100 - balance)") }
        }
    },
    ClassicBug(name: "a snapshot written back whole", bound: 1, kind: .threw, hasSynchronousForm: true) {
        fixed, awaited, threads in
        // One thread renames a document by copying it out and writing the copy back; another adds
        // a paragraph in between, which the copy doesn't have.
        struct Document: Sendable, Equatable {
            var title = "draft"
            var paragraphs: [String] = []
        }
        let document = Exclusive(Document(), label: "document")
        if awaited {
            threads.spawn {
                if fixed {
                    await document.access { $0.title = "final" }
                } else {
                    var copy = await document.access { $0 }
                    copy.title = "final"
                    await document.access { [copy] in $0 = copy }
                }
            }
            threads.spawn { await document.access { $0.paragraphs.append("intro") } }
        } else {
            threads.spawn {
                if fixed {
                    sync(document) { $0.title = "final" }
                } else {
                    var copy = sync(document) { $0 }
                    copy.title = "final"
                    sync(document) { $0 = copy }
                }
            }
            threads.spawn { sync(document) { $0.paragraphs.append("intro") } }
        }
        threads.finally {
            let saved = sync(document) { $0 }
            if saved.paragraphs != ["intro"] { throw Broken("the paragraph was lost: \(saved)") }
        }
    },
    ClassicBug(name: "a continuation never resumed", bound: 1, kind: .stuck, hasSynchronousForm: false) {
        fixed, _, threads in
        // A one-time event that tasks wait for with a continuation, which the event's firing
        // resumes. A waiter checks that it hasn't fired in one access, and parks its continuation
        // in another: a firing between them resumes nobody, and the waiter waits for ever.
        let event = Exclusive(Event(), label: "event")
        threads.spawn {
            if fixed {
                await withCheckedContinuation { continuation in
                    let fired = sync(event) { event in
                        if !event.fired { event.waiters.append(continuation) }
                        return event.fired
                    }
                    if fired { continuation.resume() }
                }
            } else if await !event.access({ $0.fired }) {
                await withCheckedContinuation { continuation in sync(event) { $0.waiters.append(continuation) } }
            }
        }
        threads.spawn {
            let waiters = await event.access { event in
                event.fired = true
                defer { event.waiters = [] }
                return event.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    },
    ClassicBug(name: "a continuation resumed twice", bound: 1, kind: .crashed, hasSynchronousForm: false) {
        fixed, _, threads in
        // A request that either its reply or its time-out completes, whichever comes first. Once
        // the request waits, each reads its continuation in one access, resumes it, and marks the
        // request done in another: both can read it before either marks it, and the second
        // resume traps.
        let request = Exclusive(Request.empty, label: "request")
        threads.spawn {
            await withCheckedContinuation { continuation in sync(request) { $0 = .waiting(continuation) } }
        }
        for _ in 0..<2 {  // the reply, and the time-out
            threads.spawn {
                try await request.access(when: { $0 != .empty }) { _ in }
                let waiting = await request.access { request -> CheckedContinuation<Void, Never>? in
                    guard case .waiting(let continuation) = request else { return nil }
                    if fixed { request = .done }
                    return continuation
                }
                waiting?.resume()
                if !fixed { await request.access { $0 = .done } }
            }
        }
    },
    ClassicBug(name: "a cancellation racing a sleep", bound: 0, kind: .threw, hasSynchronousForm: false) {
        fixed, _, threads in
        // An editor saves a document a while after a change, in a child task; closing the
        // document cancels the save. The save sleeps with `try?`, which swallows the
        // cancellation: it wakes at once, and saves a closed document.
        let document = Exclusive([String](), label: "document")
        threads.spawn {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    if fixed {
                        do { try await Task.sleep(for: .seconds(2)) } catch { return }
                    } else {
                        try? await Task.sleep(for: .seconds(2))
                    }
                    await document.access { $0.append("saved") }
                }
                await document.access { $0.append("closed") }
                group.cancelAll()
            }
        }
        threads.finally {
            let events = sync(document) { $0 }
            if events.firstIndex(of: "closed").map({ events[$0...].contains("saved") }) == true {
                throw Broken("saved after closing: \(events)")
            }
        }
    },
    ClassicBug(name: "an actor's check and act across an await", bound: 0, kind: .threw, hasSynchronousForm: false) {
        fixed, _, threads in
        // Two withdrawals from an actor's account. Each checks the balance, then awaits the card
        // network's approval, then takes the money: while one awaits, the actor runs the other
        // (actors are re-entrant), which sees the same balance. No preemption needed: both calls
        // wait in the actor's queue before it runs either.
        let wallet = Wallet()
        let paid = Exclusive(0, label: "paid")
        for _ in 0..<2 {
            threads.spawn {
                if await wallet.withdraw(80, fixed: fixed) { await paid.access { $0 += 80 } }
            }
        }
        threads.finally {
            let total = sync(paid) { $0 }
            if total > 100 { throw Broken("paid \(total) out of an account of 100") }
        }
    },
    ClassicBug(
        name: "main-actor state changed across an await", bound: 0, kind: .threw, hasSynchronousForm: false
    ) {
        fixed, _, threads in
        // Two taps on a like button, whose count lives on the main actor. Each tap reads the
        // count, awaits the server, then writes the count it read plus one: both read 0 before
        // either writes, and the second like is lost. No preemption needed: each tap's first
        // turn on the main actor comes before either's second.
        let button = LikeButton()
        let server = LikeServer()
        let shown = Exclusive([Int](), label: "shown")
        for _ in 0..<2 {
            threads.spawn {
                let count = await button.tap(sendingTo: server, fixed: fixed)
                await shown.access { $0.append(count) }
            }
        }
        threads.finally {
            let counts = sync(shown) { $0.sorted() }
            if counts != [1, 2] { throw Broken("two taps showed \(counts)") }
        }
    },
    ClassicBug(
        name: "two tasks that each wait for the other first", bound: 0, kind: .deadlock, hasSynchronousForm: false
    ) {
        fixed, _, threads in
        // A handshake: each side says it is ready, and waits until the other is. Each waits
        // before it says so: neither ever does.
        let ready = [Exclusive(false, label: "left ready"), Exclusive(false, label: "right ready")]
        for side in 0..<2 {
            threads.spawn {
                if fixed { await ready[side].access { $0 = true } }
                try await ready[1 - side].access(when: { $0 }) { _ in }
                if !fixed { await ready[side].access { $0 = true } }
            }
        }
    },
]
