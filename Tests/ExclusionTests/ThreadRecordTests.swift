import Testing

@_spi(ScheduleExploration) @testable import Exclusion

// The thread's record (`Checks/CurrentThread.swift`): leaving an instance only counts the depth
// down and keeps the slot it held, so everything that reads the record must read below the depth.

/// A controller that is never asked anything: the thread it runs touches no instance.
private final class IdleController: ScheduleController {
    func willAcquire(_ instance: ScheduledInstance, _ access: ScheduledAccess, site: String) -> Bool { false }
    func conditionUnmet(on instance: ScheduledInstance, canTimeOut: Bool) -> Bool { false }
    func drainScheduled(for instance: ScheduledInstance, _ drain: @escaping @Sendable () -> Void) {}
    func taskWillWait(in instance: ScheduledInstance, canTimeOut: Bool) {}
    func trapped(signal: Int32) {}
}

@Suite("The thread's record")
struct ThreadRecordTests {
    /// The inner instance's slot outlives the nesting; the same nesting again must not find it
    /// there and stop the process for a re-entrant access.
    @Test func anInstanceLeftAtADeeperLevelIsNotTakenForOneStillHeld() {
        let outer = Exclusive(0, label: "outer")
        let inner = Exclusive(0, label: "inner")
        for _ in 0..<2 {
            outer.access { _ in inner.access { $0 += 1 } }
        }
        outer.access { _ in #expect(!inner.isAccessing) }
        #expect(inner.access { $0 } == 2)
    }

    /// The explorer's marker is the record's first slot; once the thread is taken back, no slot
    /// may still say so, whatever the depth.
    @Test func aThreadTakenBackFromAnExplorerIsNotExploredAnyMore() {
        ScheduleSeam.controlCurrentThread(with: IdleController())
        #expect(_CurrentThread()._isScheduled)
        ScheduleSeam.releaseCurrentThread()
        #expect(!_CurrentThread()._isScheduled)
        #expect(ScheduleSeam.currentController == nil)
    }
}
