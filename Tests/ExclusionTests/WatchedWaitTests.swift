import Synchronization
import Testing

@testable import Exclusion

// The stuck-wait watch must not change how a wait sleeps: an untimed wait for an instance sleeps
// untimed whether it is watched or not, since on Apple platforms only the untimed sleep
// (`os_unfair_lock`) lends the waiter's priority to the holder. (StuckWaitTests checks the report
// itself, in processes of their own.)

/// A lock that is always taken on the first look, and records the deadline of every sleep it is
/// asked for, then grants it.
private struct SleepRecordingLock: _EngineLock {
    final class Record: Sendable {
        let sleeps = Mutex<[UInt64?]>([])
        let looked = Atomic<Bool>(false)
    }

    let record = Record()

    static var sharesAccess: Bool { true }
    static func describe(_ mode: _CurrentThread.Mode) -> String { "an access" }

    init() {}
    func destroy() {}

    /// Taken the first time anyone looks, free afterwards.
    private func lookOnce() -> Bool { record.looked.exchange(true, ordering: .relaxed) }
    private func sleep(until deadline: _Deadline?) {
        record.sleeps.withLock { $0.append(deadline?.nanoseconds) }
    }

    func lockExclusiveIfFree() -> Bool { lookOnce() }
    func tryLockExclusive() -> Bool { lookOnce() }
    func spinExclusive() -> Bool { false }
    func sleepExclusive(until deadline: _Deadline?) -> Bool {
        sleep(until: deadline)
        return true
    }
    func unlockExclusive() {}

    func lockSharedQuickly(thread: UInt32) -> Void? { lookOnce() ? () : nil }
    func tryLockShared(thread: UInt32) -> Void? { lookOnce() ? () : nil }
    func spinShared(thread: UInt32) -> Void? { nil }
    func sleepShared(thread: UInt32, until deadline: _Deadline?) -> Void? {
        sleep(until: deadline)
        return ()
    }
    func unlockShared(_ ticket: Void) {}
}

@Suite("The stuck-wait watch", .enabled(if: _StuckWait.threshold != nil, "waits are watched (debug builds)"))
struct WatchedWaitTests {
    @Test func aWatchedExclusiveWaitSleepsWithoutADeadline() {
        let engine = _Engine<Int, SleepRecordingLock>(0, kind: "Exclusive", label: "recorded")
        #expect(engine._watchesWaits)
        let thread = _CurrentThread()
        let outbox = engine.takeExclusively(thread, file: #fileID, line: #line)
        engine.releaseExclusively(thread, outbox)
        #expect(engine._lock.record.sleeps.withLock { $0 } == [nil])
    }

    @Test func aWatchedSharedWaitSleepsWithoutADeadline() {
        let engine = _Engine<Int, SleepRecordingLock>(0, kind: "ReadersWriter", label: "recorded")
        let value = engine.shared(_CurrentThread(), file: #fileID, line: #line) { $0 }
        #expect(value == 0)
        #expect(engine._lock.record.sleeps.withLock { $0 } == [nil])
    }

    @Test func aTimedWaitSleepsUntilItsOwnDeadline() throws {
        // The check above can tell deadlines apart: a timed access sleeps with its own.
        let engine = _Engine<Int, SleepRecordingLock>(0, kind: "Exclusive", label: "recorded")
        let thread = _CurrentThread()
        let limit = _TimeLimit(.seconds(3600))
        let outbox = try #require(engine.takeExclusively(thread, before: limit.deadline, file: #fileID, line: #line))
        engine.releaseExclusively(thread, outbox)
        #expect(engine._lock.record.sleeps.withLock { $0 } == [limit.deadline.nanoseconds])
    }
}
