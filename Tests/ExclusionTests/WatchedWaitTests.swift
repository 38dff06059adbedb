import ExclusionShims
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

    struct Storage {
        var words = exclusion_engine_words()
        var label = exclusion_label_room()  // where the engine keeps the label, right after the words
        var entry = exclusion_entry_room()  // and where a watched access entered, right after that
        var record: Record?
    }

    let record: Record

    static var sharesAccess: Bool { true }
    static var kind: StaticString { "Recorded" }
    static func describe(_ mode: _CurrentThread.Mode) -> String { "an access" }

    static var unprepared: Storage { Storage() }
    static func prepare(_ storage: UnsafeMutablePointer<Storage>, flags: UInt64) {
        exclusion_engine_words_init(&storage.pointee.words, flags)
        storage.pointee.record = Record()
    }
    static func destroy(_ storage: UnsafeMutablePointer<Storage>) {}
    static func words(_ storage: UnsafeMutablePointer<Storage>) -> UnsafeMutablePointer<exclusion_engine_words> {
        UnsafeMutableRawPointer(storage).assumingMemoryBound(to: exclusion_engine_words.self)
    }
    static var _headerLayout: (size: Int, alignment: Int) {
        (MemoryLayout<_EngineHeader<Storage>>.size, MemoryLayout<_EngineHeader<Storage>>.alignment)
    }

    init(at storage: UnsafeMutablePointer<Storage>) { record = storage.pointee.record! }

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

/// An instance over the recording lock, as `Exclusive` is over its own.
private final class Recorded {
    var engine: _Engine<Int, SleepRecordingLock> { _Engine(of: self) }
    deinit { engine.tearDown() }
}

@Suite("The stuck-wait watch", .enabled(if: _StuckWait.threshold != nil, "waits are watched (debug builds)"))
struct WatchedWaitTests {
    @Test func aWatchedExclusiveWaitSleepsWithoutADeadline() {
        let instance = _Engine<Int, SleepRecordingLock>.make(0, label: "recorded", as: Recorded.self)
        let engine = instance.engine
        #expect(engine._watchesWaits)
        let thread = _CurrentThread()
        let outbox = engine.takeExclusively(thread, file: #fileID, line: #line)
        engine.releaseExclusively(thread, outbox)
        #expect(engine._lock.record.sleeps.withLock { $0 } == [nil])
    }

    @Test func aWatchedSharedWaitSleepsWithoutADeadline() {
        let instance = _Engine<Int, SleepRecordingLock>.make(0, label: "recorded", as: Recorded.self)
        let engine = instance.engine
        let value = engine.shared(_CurrentThread(), file: #fileID, line: #line) { $0 }
        #expect(value == 0)
        #expect(engine._lock.record.sleeps.withLock { $0 } == [nil])
    }

    @Test func aTimedWaitSleepsUntilItsOwnDeadline() throws {
        // The check above can tell deadlines apart: a timed access sleeps with its own.
        let instance = _Engine<Int, SleepRecordingLock>.make(0, label: "recorded", as: Recorded.self)
        let engine = instance.engine
        let thread = _CurrentThread()
        let limit = _TimeLimit(.seconds(3600))
        let outbox = try #require(engine.takeExclusively(thread, before: limit.deadline, file: #fileID, line: #line))
        engine.releaseExclusively(thread, outbox)
        #expect(engine._lock.record.sleeps.withLock { $0 } == [limit.deadline.nanoseconds])
    }
}
