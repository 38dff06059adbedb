/// The accesses waiting for a condition on one instance's state, as a value: who waits, in which
/// order, who is woken, and who the state is promised to. Each transition takes an event and
/// returns what has to happen because of it (`_WaitAction`: wake this thread, run that job, fail
/// it), which `_WaitList` carries out under its lock. Nothing here locks, sleeps, calls a closure
/// or looks inside what it carries: conditions are evaluated by the caller, who tells the line
/// what it found.
///
/// It carries a `Sleeper` for each blocked thread and a `Job` for each awaited or submitted
/// access, and never looks inside them, so it can be tested on its own (`WaitLineTests`), over
/// every short sequence of events.
///
/// A blocked thread joins asleep; a release that finds its condition true wakes it, and it keeps
/// its place until it has held the state and looked again: then it leaves, or sleeps again. After
/// `lossesBeforeGrant` such losses the next wake-up promises it the state (the grant). A job is
/// expected, then arrives (its turn to look at the state is in the engine's backlog); in its
/// turn it runs if its condition holds, and otherwise joins the line, where a release that finds
/// its condition true runs it. A job leaves when it runs, or fails: timed out, cancelled, or
/// ended with the instance.
struct _WaitLine<Sleeper, Job> {
    /// A waiter in line.
    enum Entry {
        /// A blocked thread; `woken` once a release found its condition true, until it looks
        /// again; `losses`: how often it looked again and found its condition false.
        case thread(Sleeper, woken: Bool, losses: Int)
        /// An awaited or submitted access that found its condition false in its turn.
        case job(Job, observer: Bool)
    }

    /// An awaited or submitted access that hasn't joined the line.
    enum Arrival {
        /// Being set up (its continuation is made); `endedWith` if it was cancelled or timed out
        /// meanwhile, which it then learns when it arrives.
        case expected(JobTraits, endedWith: _WaitFailure?)
        /// Waiting for its turn in the engine's backlog.
        case inTurn(Job, JobTraits)
    }

    struct JobTraits: Equatable {
        /// A `values` iterator: it ends when the public instance goes away.
        var observer: Bool
        /// It held the state and found its condition false before it arrived.
        var looked: Bool
    }

    /// The line, in the order its waiters joined.
    private(set) var entries: [(id: _WaiterID, entry: Entry)] = []
    /// Jobs not yet in line.
    private(set) var arrivals: [_WaiterID: Arrival] = [:]
    /// The thread the state is promised to: the one place the grant is kept.
    private(set) var grantee: _WaiterID?
    /// Whether the public instance went away: observers then fail, now and when they arrive.
    private(set) var observationsEnded = false
    /// How many waiters in line a release must look at: jobs, and threads not woken.
    private(set) var sleepers = 0
    private var issued: UInt64 = 0

    /// How many times a blocked thread may look again and find its condition false before its
    /// next wake-up promises it the state.
    static var lossesBeforeGrant: Int { 2 }

    // MARK: - Blocked threads

    /// A thread that holds the state found its condition false: it joins the line, asleep.
    mutating func threadSleeps(_ sleeper: Sleeper) -> _WaiterID {
        let id = issue()
        entries.append((id, .thread(sleeper, woken: false, losses: 0)))
        sleepers += 1
        return id
    }

    /// A woken thread holds the state and found its condition false again: it sleeps again, in
    /// its place.
    mutating func threadSleepsAgain(_ id: _WaiterID) {
        guard let index = index(of: id), case .thread(let sleeper, woken: true, let losses) = entries[index].entry
        else { return }
        entries[index].entry = .thread(sleeper, woken: false, losses: losses + 1)
        sleepers += 1
    }

    /// A woken thread holds the state: whether the state was promised to it. If it was, the grant
    /// ends now, taken up.
    mutating func threadTakesUpItsGrant(_ id: _WaiterID) -> Bool {
        guard grantee == id else { return false }
        grantee = nil
        return true
    }

    /// A thread leaves the line: it found its condition true, or gave up. A grant it held ends.
    mutating func threadLeaves(_ id: _WaiterID) {
        guard let index = index(of: id), case .thread(_, let woken, _) = entries[index].entry else { return }
        entries.remove(at: index)
        if !woken { sleepers -= 1 }
        if grantee == id { grantee = nil }
    }

    /// A thread's time ran out while it slept: whether it left the line. A thread already woken
    /// stays: its wake-up is on its way, and it must take it and look again.
    mutating func threadTimesOut(_ id: _WaiterID) -> Bool {
        guard let index = index(of: id), case .thread(_, woken: false, _) = entries[index].entry else { return false }
        entries.remove(at: index)
        sleepers -= 1
        return true
    }

    /// The thread the state is promised to, if any.
    var granteeSleeper: Sleeper? {
        guard let grantee, let index = index(of: grantee), case .thread(let sleeper, _, _) = entries[index].entry
        else { return nil }
        return sleeper
    }

    // MARK: - Awaited and submitted accesses

    /// An awaited or submitted access is being set up: its name, for the events to come.
    mutating func expectJob(observer: Bool, looked: Bool) -> _WaiterID {
        let id = issue()
        arrivals[id] = .expected(JobTraits(observer: observer, looked: looked), endedWith: nil)
        return id
    }

    /// The access is set up: it waits for its turn. It fails at once if it was cancelled or timed
    /// out while it was set up, or is an observer of an instance that went away.
    mutating func jobArrives(_ id: _WaiterID, _ job: Job) -> _WaitAction<Sleeper, Job> {
        guard case .expected(let traits, let ended)? = arrivals[id] else { return .none }
        if let failure = ended ?? (traits.observer && observationsEnded ? .observationEnded : nil) {
            arrivals[id] = nil
            return .fail(job, failure)
        }
        arrivals[id] = .inTurn(job, traits)
        return .none
    }

    /// The job whose turn came, to look at the state; nil if it left meanwhile, or must leave now
    /// (an observer of an instance that went away: `jobEnds` says so).
    func jobInTurn(_ id: _WaiterID) -> Job? {
        guard case .inTurn(let job, let traits)? = arrivals[id], !(traits.observer && observationsEnded) else {
            return nil
        }
        return job
    }

    /// The job in its turn looked at the state: it runs now if its condition holds, and joins the
    /// line otherwise. An observer of an instance that went away fails instead.
    mutating func jobLooked(_ id: _WaiterID, conditionHolds: Bool) -> _WaitAction<Sleeper, Job> {
        guard case .inTurn(let job, let traits)? = arrivals.removeValue(forKey: id) else { return .none }
        if traits.observer && observationsEnded { return .fail(job, .observationEnded) }
        if conditionHolds { return .run(job) }
        entries.append((id, .job(job, observer: traits.observer)))
        sleepers += 1
        return .none
    }

    /// The job is to end without running (`failure` says why), wherever it is; nothing happens
    /// if it ran or ended already. A job still being set up learns it when it arrives. A time
    /// limit that passes says what the job waited for: the state, if it never held it, or its
    /// condition.
    mutating func jobEnds(_ id: _WaiterID, _ failure: _WaitFailure) -> _WaitAction<Sleeper, Job> {
        switch arrivals[id] {
        case .expected(let traits, endedWith: nil)?:
            arrivals[id] = .expected(traits, endedWith: failure.given(looked: traits.looked))
            return .none
        case .expected?:
            return .none
        case .inTurn(let job, let traits)?:
            arrivals[id] = nil
            return .fail(job, failure.given(looked: traits.looked))
        case nil:
            guard let index = index(of: id), case .job(let job, _) = entries[index].entry else { return .none }
            entries.remove(at: index)
            sleepers -= 1
            return .fail(job, failure.given(looked: true))
        }
    }

    /// The public instance went away: the observers in line and in their turn, which fail. Those
    /// that arrive or look later fail too.
    mutating func endObservations() -> [Job] {
        observationsEnded = true
        var ended: [Job] = []
        entries.removeAll { waiter in
            guard case .job(let job, observer: true) = waiter.entry else { return false }
            ended.append(job)
            sleepers -= 1
            return true
        }
        for (id, arrival) in arrivals {
            guard case .inTurn(let job, let traits) = arrival, traits.observer else { continue }
            arrivals[id] = nil
            ended.append(job)
        }
        return ended
    }

    /// Every job in line or in its turn, which end with the engine; threads stay (a thread blocked
    /// in an access holds the engine, which can't end before it).
    mutating func endJobs() -> [Job] {
        var ended: [Job] = []
        entries.removeAll { waiter in
            guard case .job(let job, _) = waiter.entry else { return false }
            ended.append(job)
            sleepers -= 1
            return true
        }
        for (id, arrival) in arrivals {
            guard case .inTurn(let job, _) = arrival else { continue }
            arrivals[id] = nil
            ended.append(job)
        }
        return ended
    }

    // MARK: - Releases

    /// The waiters a release looks at, in order: every job in line, and, if `mayWake`, every
    /// thread not woken, but `joiner` (which has just found its condition false). The caller
    /// evaluates their conditions, and serves the first that holds.
    func candidates(mayWake: Bool, skipping joiner: _WaiterID?) -> some Sequence<(id: _WaiterID, entry: Entry)> {
        entries.lazy.filter { waiter in
            switch waiter.entry {
            case .job: true
            case .thread(_, let woken, _): mayWake && !woken && waiter.id != joiner
            }
        }
    }

    /// A release found the condition of `id`, a candidate, true: a job leaves the line to run now,
    /// with the state held; a thread is woken, and promised the state if it lost it too often.
    mutating func serve(_ id: _WaiterID) -> _WaitAction<Sleeper, Job> {
        guard let index = index(of: id) else { return .none }
        switch entries[index].entry {
        case .job(let job, _):
            entries.remove(at: index)
            sleepers -= 1
            return .run(job)
        case .thread(_, woken: true, _):
            return .none
        case .thread(let sleeper, woken: false, let losses):
            entries[index].entry = .thread(sleeper, woken: true, losses: losses)
            sleepers -= 1
            guard losses >= Self.lossesBeforeGrant else { return .wake(sleeper, granted: false) }
            grantee = id
            return .wake(sleeper, granted: true)
        }
    }

    // MARK: -

    private mutating func issue() -> _WaiterID {
        issued += 1
        return _WaiterID(number: issued)
    }

    private func index(of id: _WaiterID) -> Int? {
        entries.firstIndex { $0.id == id }
    }
}

/// Names a waiter in its line: numbers given in the order waiters come.
@usableFromInline
struct _WaiterID: Hashable, Sendable {
    @usableFromInline let number: UInt64
}

/// What has to happen because of a transition of `_WaitLine`.
enum _WaitAction<Sleeper, Job> {
    case none
    /// Wake the thread once the state is released; `granted` if the state is promised to it.
    case wake(Sleeper, granted: Bool)
    /// Run the job now, with the state held; it has left the line (stop its timer).
    case run(Job)
    /// End the job without running it, with the error `failure` stands for; it has left the
    /// line (stop its timer).
    case fail(Job, _WaitFailure)
}

/// Why a job ended without running.
enum _WaitFailure: Equatable, Sendable {
    /// Its time limit passed: `conditionFalse` if it had held the state and found its condition
    /// false, so that the limit ran out on the condition, not on others holding the state.
    case timedOut(conditionFalse: Bool)
    /// Its task was cancelled, or the engine ended.
    case cancelled
    /// An observer whose public instance went away.
    case observationEnded

    /// A time limit says what the job waited for, given whether it had looked.
    fileprivate func given(looked: Bool) -> Self {
        guard case .timedOut = self else { return self }
        return .timedOut(conditionFalse: looked)
    }
}
