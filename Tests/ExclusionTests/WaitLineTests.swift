import ExclusionTestSupport
import Testing

@testable import Exclusion

// The wait line on its own, exhaustively: every sequence of events up to a length, for up to
// three waiters of each mix of kinds (blocked threads, awaited accesses), checked against the
// invariants the engine relies on. Each test checks one invariant over one shared exploration;
// Verification/audit.py plants a bug in the line for each and shows the test failing.

@Suite("The wait line, every short sequence of events", .onThreadsOfItsOwn)
struct WaitLineTests {
    @Test func atMostOneThreadIsPromisedTheState() async throws {
        let found = try await exploration().violations(of: .oneGrantee)
        #expect(found.isEmpty, "\(found.prefix(3).joined(separator: "\n"))")
    }

    @Test func nobodyIsWokenOrEndedTwice() async throws {
        let found = try await exploration().violations(of: .onceEach)
        #expect(found.isEmpty, "\(found.prefix(3).joined(separator: "\n"))")
    }

    @Test func nobodySleepsOnWhileTheLineIsFreeAndTheirConditionHolds() async throws {
        let found = try await exploration().violations(of: .noneLeftAsleep)
        #expect(found.isEmpty, "\(found.prefix(3).joined(separator: "\n"))")
    }

    @Test func waitersWhoseConditionsHoldAreServedInTheOrderTheyCame() async throws {
        let found = try await exploration().violations(of: .firstComeFirstServed)
        #expect(found.isEmpty, "\(found.prefix(3).joined(separator: "\n"))")
    }

    @Test func theExplorationReachesGrantsTimeoutsAndCancellations() async throws {
        let exploration = try await exploration()
        #expect(exploration.grantsMade > 0)
        #expect(exploration.grantsTakenUp > 0)
        #expect(exploration.threadsTimedOut > 0)
        #expect(exploration.jobsFailed > 0)
        #expect(exploration.statesSeen > 1_000)
    }

    /// The exploration, made once, off the shared pool: it keeps a processor busy for a second or
    /// two (minutes under ThreadSanitizer), which the pool's other tests would wait out.
    private func exploration() async throws -> WaitLineExploration {
        try await within(workloadPatience, "the wait line's exploration") { WaitLineExploration.shared }
    }

    // MARK: - What the exploration leaves out

    @Test func aJobCancelledWhileItIsSetUpFailsWhenItArrives() {
        var line = _WaitLine<Int, Int>()
        let id = line.expectJob(observer: false, looked: false)
        guard case .none = line.jobEnds(id, .cancelled) else { Issue.record("failed before it arrived"); return }
        guard case .fail(7, .cancelled) = line.jobArrives(id, 7) else { Issue.record("arrived"); return }
        #expect(line.arrivals.isEmpty && line.entries.isEmpty)
    }

    @Test func aTimeLimitSaysWhatTheJobWaitedFor() {
        var line = _WaitLine<Int, Int>()
        let first = line.expectJob(observer: false, looked: false)
        _ = line.jobArrives(first, 1)
        let second = line.expectJob(observer: false, looked: true)
        _ = line.jobArrives(second, 2)
        let third = line.expectJob(observer: false, looked: false)
        _ = line.jobArrives(third, 3)
        _ = line.jobLooked(third, conditionHolds: false)
        guard case .fail(1, .timedOut(conditionFalse: false)) = line.jobEnds(first, .timedOut(conditionFalse: false)),
            case .fail(2, .timedOut(conditionFalse: true)) = line.jobEnds(second, .timedOut(conditionFalse: false)),
            case .fail(3, .timedOut(conditionFalse: true)) = line.jobEnds(third, .timedOut(conditionFalse: false))
        else {
            Issue.record("a time limit named the wrong cause")
            return
        }
        #expect(line.sleepers == 0)
    }

    @Test func observersEndWithTheInstanceInLineInTheirTurnAndLater() {
        var line = _WaitLine<Int, Int>()
        let waiting = line.expectJob(observer: true, looked: false)
        _ = line.jobArrives(waiting, 1)
        _ = line.jobLooked(waiting, conditionHolds: false)
        let inTurn = line.expectJob(observer: true, looked: false)
        _ = line.jobArrives(inTurn, 2)
        let plain = line.expectJob(observer: false, looked: false)
        _ = line.jobArrives(plain, 3)
        _ = line.jobLooked(plain, conditionHolds: false)
        let later = line.expectJob(observer: true, looked: false)
        #expect(line.endObservations().sorted() == [1, 2])
        guard case .fail(4, .observationEnded) = line.jobArrives(later, 4) else {
            Issue.record("an observer arrived after the instance went away")
            return
        }
        #expect(line.sleepers == 1)
        #expect(line.endJobs() == [3])
        #expect(line.sleepers == 0)
    }
}

/// Every state the wait line reaches in `depth` events from an empty line, for every mix of up
/// to three waiters, and what each invariant found wrong on the way.
///
/// A state is the line and what the waiters know of themselves; states reached by different
/// sequences are explored once, since what can happen next, and what it must do, depends only on
/// the state. Events are those of the engine, with what the engine guarantees around them: while
/// the state is promised to a thread, nothing but that thread takes it (no release, no turn, no
/// other woken thread looking again).
struct WaitLineExploration: Sendable {
    enum Invariant: Hashable, Sendable {
        /// At most one thread is promised the state, and the line's grantee is a woken thread in it.
        case oneGrantee
        /// No thread is woken while woken already, no job runs or fails after it ended, and none
        /// ends twice.
        case onceEach
        /// After a release that woke nobody (or made no grant, for jobs), no waiter in line whose
        /// condition holds is left waiting; and the count of waiters a release looks at is right.
        case noneLeftAsleep
        /// A release serves the first waiter in order of arrival whose condition holds (threads
        /// only until one is woken).
        case firstComeFirstServed
    }

    private(set) var found: [Invariant: [String]] = [:]
    private(set) var statesSeen = 0
    private(set) var grantsMade = 0
    private(set) var grantsTakenUp = 0
    private(set) var threadsTimedOut = 0
    private(set) var jobsFailed = 0

    static let shared = WaitLineExploration(depth: 6, longerForFewerWaiters: 9)

    func violations(of invariant: Invariant) -> [String] { found[invariant] ?? [] }

    /// Up to `depth` events for three waiters; up to `longer` for one or two, so that a thread
    /// can lose its wake-up twice, be promised the state and take it up, or leave.
    init(depth: Int, longerForFewerWaiters longer: Int) {
        for count in 1...3 {
            for mix in 0..<(1 << count) {
                let kinds = (0..<count).map { mix & (1 << $0) != 0 ? Kind.job : .thread }
                explore(from: Model(kinds: kinds), depth: count == 3 ? depth : longer)
            }
        }
    }

    private mutating func explore(from start: Model, depth: Int) {
        var seen: Set<Model.Fingerprint> = [start.fingerprint]
        var frontier = [start]
        for _ in 0..<depth {
            var next: [Model] = []
            for model in frontier {
                for event in model.enabledEvents {
                    var after = model
                    var log = Log()
                    after.apply(event, &log)
                    count(log)
                    for (invariant, problem) in log.problems {
                        found[invariant, default: []].append("\(problem) after \(model.history + [event])")
                    }
                    after.history.append(event)
                    if seen.insert(after.fingerprint).inserted { next.append(after) }
                }
            }
            statesSeen += next.count
            frontier = next
        }
    }

    private mutating func count(_ log: Log) {
        grantsMade += log.grantsMade
        grantsTakenUp += log.grantsTakenUp
        threadsTimedOut += log.threadsTimedOut
        jobsFailed += log.jobsFailed
    }

    enum Kind: Hashable, Sendable {
        case thread, job
    }

    enum Event: Hashable, Sendable, CustomStringConvertible {
        /// A thread holding the state finds its condition false and sleeps; an access is set up
        /// and waits for its turn.
        case arrive(Int)
        /// A job in its turn, or a woken thread that took the state back, finds its condition true
        /// or false.
        case look(Int, holds: Bool)
        /// An exclusive access leaves the state such that the waiters' conditions are `holds`
        /// (one bit per waiter), and releases it.
        case release(holds: Int)
        case timeOut(Int)
        case cancel(Int)
        /// A woken thread's time ran out before it took the state back: it leaves, and an empty
        /// access is queued whose release serves the others in its place.
        case giveUp(Int)

        var description: String {
            switch self {
            case .arrive(let waiter): "arrive \(waiter)"
            case .look(let waiter, let holds): "\(waiter) looks: \(holds)"
            case .release(let holds): "release \(String(holds, radix: 2))"
            case .timeOut(let waiter): "time out \(waiter)"
            case .cancel(let waiter): "cancel \(waiter)"
            case .giveUp(let waiter): "\(waiter) gives up"
            }
        }
    }

    /// What one event did, and what it broke.
    struct Log {
        var problems: [(Invariant, String)] = []
        var grantsMade = 0
        var grantsTakenUp = 0
        var threadsTimedOut = 0
        var jobsFailed = 0

        mutating func violated(_ invariant: Invariant, _ problem: String) {
            problems.append((invariant, problem))
        }
    }

    /// The line and, apart from it, what each waiter knows of itself: the reference the line's
    /// actions are checked against.
    struct Model {
        enum Phase: Hashable {
            case notYet
            case asleep
            case woken
            case inTurn(looked: Bool)
            case waiting
            case done
        }

        var line = _WaitLine<Int, Int>()
        let kinds: [Kind]
        var ids: [_WaiterID?]
        var phases: [Phase]
        /// Whether each waiter's condition holds on the state as the last access left it.
        var holds: [Bool]
        /// The waiters in line, in the order they joined.
        var order: [Int] = []
        var grantee: Int?
        var history: [Event] = []

        init(kinds: [Kind]) {
            self.kinds = kinds
            ids = Array(repeating: nil, count: kinds.count)
            phases = Array(repeating: .notYet, count: kinds.count)
            holds = Array(repeating: false, count: kinds.count)
        }

        struct Fingerprint: Hashable {
            let kinds: [Kind]
            let phases: [Phase]
            let holds: [Bool]
            let order: [Int]
            let grantee: Int?
            let lineEntries: [String]
            let lineGrantee: UInt64?
            let sleepers: Int
        }

        var fingerprint: Fingerprint {
            Fingerprint(
                kinds: kinds, phases: phases, holds: holds, order: order, grantee: grantee,
                lineEntries: line.entries.map { "\($0.id.number) \($0.entry)" }, lineGrantee: line.grantee?.number,
                sleepers: line.sleepers)
        }

        var enabledEvents: [Event] {
            // While the state is promised, only the grantee may take it.
            let promised = grantee != nil
            var events: [Event] = []
            for waiter in kinds.indices {
                switch (kinds[waiter], phases[waiter]) {
                case (.thread, .notYet):
                    if !promised { events.append(.arrive(waiter)) }
                case (.job, .notYet):
                    events.append(.arrive(waiter))
                case (.thread, .woken):
                    if !promised || grantee == waiter {
                        events += [.look(waiter, holds: true), .look(waiter, holds: false)]
                    }
                    events += [.timeOut(waiter), .giveUp(waiter)]
                case (.thread, .asleep):
                    events.append(.timeOut(waiter))
                case (.job, .inTurn):
                    if !promised { events += [.look(waiter, holds: true), .look(waiter, holds: false)] }
                    events += [.timeOut(waiter), .cancel(waiter)]
                case (.job, .waiting):
                    events += [.timeOut(waiter), .cancel(waiter)]
                default:
                    break
                }
            }
            if !promised && !order.isEmpty {
                let inLine = order.reduce(0) { $0 | 1 << $1 }
                // Every combination of the conditions of the waiters in line.
                var holds = inLine
                while true {
                    events.append(.release(holds: holds))
                    if holds == 0 { break }
                    holds = (holds - 1) & inLine
                }
            }
            return events
        }

        mutating func apply(_ event: Event, _ log: inout Log) {
            switch event {
            case .arrive(let waiter):
                holds[waiter] = false
                if kinds[waiter] == .thread {
                    ids[waiter] = line.threadSleeps(waiter)
                    phases[waiter] = .asleep
                    order.append(waiter)
                } else {
                    let id = line.expectJob(observer: false, looked: false)
                    ids[waiter] = id
                    phases[waiter] = .inTurn(looked: false)
                    expectNothing(line.jobArrives(id, waiter), waiter, "arriving", &log)
                }
            case .look(let waiter, let holds):
                self.holds[waiter] = holds
                if kinds[waiter] == .job {
                    let action = line.jobLooked(ids[waiter]!, conditionHolds: holds)
                    if holds {
                        expectRun(action, waiter, &log)
                    } else {
                        expectNothing(action, waiter, "finding its condition false", &log)
                        phases[waiter] = .waiting
                        order.append(waiter)
                    }
                } else {
                    lookAgain(waiter, holds: holds, &log)
                }
            case .release(let holds):
                for waiter in order { self.holds[waiter] = holds & (1 << waiter) != 0 }
                release(skipping: nil, &log)
            case .timeOut(let waiter):
                let id = ids[waiter]!
                if kinds[waiter] == .thread {
                    let left = line.threadTimesOut(id)
                    if left != (phases[waiter] == .asleep) {
                        log.violated(.onceEach, "thread \(waiter) \(left ? "left" : "stayed") when its time ran out")
                    }
                    if left {
                        log.threadsTimedOut += 1
                        leave(waiter)
                    }
                } else {
                    let looked: Bool
                    switch phases[waiter] {
                    case .inTurn(let before): looked = before
                    default: looked = true
                    }
                    expectFailure(
                        line.jobEnds(id, .timedOut(conditionFalse: false)), waiter, .timedOut(conditionFalse: looked),
                        &log)
                }
            case .cancel(let waiter):
                expectFailure(line.jobEnds(ids[waiter]!, .cancelled), waiter, .cancelled, &log)
            case .giveUp(let waiter):
                line.threadLeaves(ids[waiter]!)
                leave(waiter)
                // The empty access's release, once it runs; only the grantee could have held the state meanwhile, and it has left.
                release(skipping: nil, &log)
            }
            check(&log)
        }

        /// A woken thread took the state back and looked again.
        private mutating func lookAgain(_ waiter: Int, holds: Bool, _ log: inout Log) {
            let id = ids[waiter]!
            let wasGranted = line.threadTakesUpItsGrant(id)
            if wasGranted != (grantee == waiter) {
                log.violated(.oneGrantee, "thread \(waiter) took up a grant \(wasGranted ? "not its own" : "it had")")
            }
            if grantee == waiter {
                grantee = nil
                log.grantsTakenUp += 1
            }
            if holds {
                line.threadLeaves(id)
                leave(waiter)
            } else {
                line.threadSleepsAgain(id)
                phases[waiter] = .asleep
                // It lets go of the state, and the others may need serving: not it.
                release(skipping: waiter, &log)
            }
        }

        /// A release, as the engine serves it: the first waiter whose condition holds, again and
        /// again, waking one thread at most, and none after a grant.
        private mutating func release(skipping joiner: Int?, _ log: inout Log) {
            var mayWake = true
            var woke = false
            var granted = false
            serving: while line.sleepers > 0 {
                let candidates = Array(line.candidates(mayWake: mayWake, skipping: joiner.flatMap { ids[$0] }))
                guard let ready = candidates.first(where: { holds[waiter(of: $0.id)] }) else { break }
                let served = waiter(of: ready.id)
                let first = order.first { other in
                    holds[other] && other != joiner
                        && (phases[other] == .waiting || (mayWake && phases[other] == .asleep))
                }
                if served != first {
                    log.violated(
                        .firstComeFirstServed,
                        "a release served \(served) while \(first.map(String.init) ?? "nobody") came first")
                }
                switch line.serve(ready.id) {
                case .run(let job):
                    expectRun(.run(job), served, &log)
                case .wake(let thread, let grant):
                    if thread != served || phases[served] != .asleep {
                        log.violated(.onceEach, "thread \(thread) was woken while \(phases[thread])")
                    }
                    phases[thread] = .woken
                    mayWake = false
                    woke = true
                    if grant {
                        if let grantee {
                            log.violated(.oneGrantee, "\(thread) was promised the state, promised to \(grantee)")
                        }
                        grantee = thread
                        granted = true
                        log.grantsMade += 1
                        break serving
                    }
                case .fail(let job, _):
                    log.violated(.onceEach, "a release failed job \(job)")
                case .none:
                    log.violated(.onceEach, "a release served nobody when asked to serve \(served)")
                    break serving
                }
            }
            for waiter in order where holds[waiter] && waiter != joiner {
                if phases[waiter] == .waiting && !granted {
                    log.violated(.noneLeftAsleep, "job \(waiter)'s condition holds, and it still waits")
                }
                if phases[waiter] == .asleep && !woke {
                    log.violated(.noneLeftAsleep, "thread \(waiter)'s condition holds, and nobody was woken")
                }
            }
        }

        private func waiter(of id: _WaiterID) -> Int {
            ids.firstIndex(of: id)!
        }

        private mutating func leave(_ waiter: Int) {
            phases[waiter] = .done
            order.removeAll { $0 == waiter }
            if grantee == waiter { grantee = nil }
        }

        private mutating func expectRun(_ action: _WaitAction<Int, Int>, _ waiter: Int, _ log: inout Log) {
            guard case .run(let job) = action, job == waiter else {
                log.violated(.onceEach, "job \(waiter) was to run, and the line said \(action)")
                return
            }
            if phases[waiter] == .done { log.violated(.onceEach, "job \(waiter) ran after it ended") }
            leave(waiter)
        }

        private mutating func expectFailure(
            _ action: _WaitAction<Int, Int>, _ waiter: Int, _ failure: _WaitFailure, _ log: inout Log
        ) {
            guard phases[waiter] != .done else {
                if case .none = action { return }
                log.violated(.onceEach, "job \(waiter) ended, and then the line said \(action)")
                return
            }
            guard case .fail(let job, let reason) = action, job == waiter, reason == failure else {
                log.violated(.onceEach, "job \(waiter) was to fail (\(failure)), and the line said \(action)")
                return
            }
            log.jobsFailed += 1
            leave(waiter)
        }

        private func expectNothing(_ action: _WaitAction<Int, Int>, _ waiter: Int, _ doing: String, _ log: inout Log) {
            if case .none = action { return }
            log.violated(.onceEach, "\(waiter), \(doing), made the line say \(action)")
        }

        /// What must hold after every event.
        private func check(_ log: inout Log) {
            if line.grantee != grantee.flatMap({ ids[$0] }) {
                log.violated(
                    .oneGrantee,
                    "the line promises the state to \(String(describing: line.grantee)), not \(String(describing: grantee))"
                )
            }
            if let promised = line.grantee {
                let isWokenThread = line.entries.contains { waiter in
                    guard waiter.id == promised, case .thread(_, woken: true, _) = waiter.entry else { return false }
                    return true
                }
                if !isWokenThread {
                    log.violated(.oneGrantee, "the state is promised to \(promised), no woken thread in line")
                }
            }
            let sleeping = phases.count { $0 == .asleep || $0 == .waiting }
            if line.sleepers != sleeping {
                log.violated(
                    .noneLeftAsleep, "the line counts \(line.sleepers) for releases to look at, not \(sleeping)")
            }
        }
    }
}
