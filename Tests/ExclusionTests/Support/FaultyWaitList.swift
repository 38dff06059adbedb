import Dispatch

@testable import Exclusion

/// Bugs a test can plant in an instance's wait list, to show that its checker catches each of them
/// in this very engine. Instances made by the public initializers have none.
struct WaitFaults: OptionSet, Sendable {
    let rawValue: Int
    /// Releases never check conditions: a waiter would need an explicit signal (a lost wake-up).
    static let signalOnly = WaitFaults(rawValue: 1 << 0)
    /// Every release wakes every blocked thread, whatever its condition says.
    static let wakesEveryone = WaitFaults(rawValue: 1 << 1)
    /// A woken thread runs its body without checking its condition again.
    static let noRecheck = WaitFaults(rawValue: 1 << 2)
    /// A cancelled awaited access stays in line.
    static let forgetCancelled = WaitFaults(rawValue: 1 << 3)
    /// A blocked thread is never granted the state, however often it loses it.
    static let noGrant = WaitFaults(rawValue: 1 << 4)
    /// A woken thread that gives up before it takes the state back leaves the others unchecked.
    static let noRecheckAfterGivingUp = WaitFaults(rawValue: 1 << 5)
}

/// A wait list with `faults` planted in it.
final class FaultyWaitList<State>: _WaitList<State>, @unchecked Sendable {
    // @unchecked: adds only an immutable field to its superclass, which guards its own state.
    let faults: WaitFaults

    init(_ faults: WaitFaults) {
        self.faults = faults
        super.init()
    }

    override func stillHolds(_ condition: (State) -> Bool, _ state: State) -> Bool {
        faults.contains(.noRecheck) || super.stillHolds(condition, state)
    }

    override var lossesBeforeGrant: Int { faults.contains(.noGrant) ? .max : super.lossesBeforeGrant }

    override var rechecksForAThreadThatGaveUp: Bool {
        !faults.contains(.noRecheckAfterGivingUp) && super.rechecksForAThreadThatGaveUp
    }

    override func cancel(_ waiter: _Waiter<State>) {
        if !faults.contains(.forgetCancelled) { super.cancel(waiter) }
    }

    override func nextReady(
        _ state: UnsafeMutablePointer<State>, woken: inout DispatchSemaphore?, skipping joiner: _Waiter<State>?
    ) -> (@Sendable (inout sending State, inout Outbox) -> Void)? {
        if faults.contains(.signalOnly) { return nil }
        if faults.contains(.wakesEveryone) {
            wakeEveryThreadWithoutChecking()
            return nil
        }
        return super.nextReady(state, woken: &woken, skipping: joiner)
    }
}

extension Exclusive {
    /// An instance with `faults` planted in its wait list.
    convenience init(_ initialState: sending State, label: String, faults: WaitFaults) {
        self.init(initialState, label: label, waitList: FaultyWaitList(faults))
    }
}

extension ReadersWriter {
    /// An instance with `faults` planted in its wait list.
    convenience init(_ initialState: sending State, label: String, faults: WaitFaults) {
        self.init(initialState, label: label, waitList: FaultyWaitList(faults))
    }
}
