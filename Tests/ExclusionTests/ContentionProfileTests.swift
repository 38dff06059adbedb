import ExclusionLockTesting
import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

@testable import Exclusion

/// A label no other test uses: the profile sees every instance of the process, and other suites
/// run beside this one.
private func unique(_ name: String) -> String { "\(name) \(UInt32.random(in: 0...UInt32.max))" }

/// A report made from `report`'s rows, each changed by `change`: a report with a bug in it, for a
/// check that must reject it.
private func broken(_ report: ContentionReport, _ change: (inout ContentionReport.Row) -> Void) -> ContentionReport {
    let rows = report.rows.map { row in
        var changed = row
        change(&changed)
        return changed
    }
    return ContentionReport(rows: rows, dropped: 0, sampling: .all, duration: 1)
}

/// The bugs a recording could have, planted in a report of the known workload.
enum PlantedBug: CaseIterable, Sendable {
    /// Waits measured from when the lock was taken, not from when the wait began.
    case waitFromAcquisition
    /// Waits measured until the access let go of the state, not until it took it.
    case waitUntilRelease
    /// Holders never noted.
    case noHolders

    func plant(_ row: inout ContentionReport.Row) {
        switch self {
        case .waitFromAcquisition: (row.nanoseconds, row.longest) = (0, 0)
        case .waitUntilRelease: (row.nanoseconds, row.longest) = (row.nanoseconds * 3 / 2, row.longest * 3 / 2)
        case .noHolders:
            row = ContentionReport.Row(
                label: row.label, type: row.type, kind: row.kind, waiter: row.waiter, holder: nil, count: row.count,
                nanoseconds: row.nanoseconds, longest: row.longest)
        }
    }
}

/// How long the known holder holds, and how many times.
private let holdMilliseconds = 100
private let rounds = 6

/// The known workload. Each round, a thread enters `hot` (at `holderLine`) and, from inside,
/// starts a second thread that accesses `hot` (at `waiterLine`). The first waits until the second
/// is waiting and lets go `holdMilliseconds` after that, so the second waits about that long,
/// however late a busy machine lets it arrive; inside, the second sleeps half as long, which is not
/// part of its wait. Both threads are plain threads started by the round itself, so a busy task
/// pool can't make the waiter arrive after the hold. Both also access `cold`, one after the other,
/// never at once. Returns the profile's report and the waiter's own measure of its waits.
private func knownWorkload(hot: Exclusive<Int>, cold: Exclusive<Int>) async throws -> (ContentionReport, Duration) {
    let profile = ContentionProfile.start(sampling: .all)
    var measured = Duration.zero
    for _ in 0..<rounds {
        measured += try await onItsOwnThread {
            let waited = Recorder<Duration>()
            let waiterDone = DispatchSemaphore(value: 0)
            holderLine.store(#line + 1, ordering: .relaxed)
            hot.access { _ in  // the holder's line
                onNewThread {
                    let start = ContinuousClock.now
                    waiterLine.store(#line + 1, ordering: .relaxed)
                    hot.access { value in  // the waiter's line
                        waited.record(ContinuousClock.now - start)
                        value += 1
                        usleep(UInt32(holdMilliseconds * 1_000 / 2))
                    }
                    waiterDone.signal()
                }
                _ = spin(until: { hot._engine._releaseWork.hasProfiledWaiters }, timeout: .seconds(120))
                // The hold lasts `holdMilliseconds` from the waiter's arrival, which a busy machine
                // can delay by tens of milliseconds: held from the holder's entry instead, the
                // profiled wait once fell below the holds it must have waited out.
                usleep(UInt32(holdMilliseconds * 1_000))
            }
            cold.access { $0 += 1 }
            _ = waiterDone.wait(timeout: .now() + 120)
            return waited.values.first ?? .zero
        }
        await cold.access { $0 += 1 }
    }
    return (profile.stop(), measured)
}

/// Which round of `shortWaits` the holder has begun, which the waiter has arrived for, and which
/// it has done.
private final class Turns: Sendable {
    let go = Atomic<Int>(0)
    let arrived = Atomic<Int>(0)
    let done = Atomic<Int>(0)
}

/// The lines of the known workload's two accesses.
private let holderLine = Atomic<Int>(0)
private let waiterLine = Atomic<Int>(0)
private let file = "ExclusionTests/ContentionProfileTests.swift"

@Suite("Contention profile", .serialized, .patientTimeLimit(minutes: 10))
struct ContentionProfileTests {
    /// Whether the report shows the known workload: the hot instance, its waiter's and holder's
    /// sites, and a total wait of at least most of the holds and at most what the waiter measured
    /// itself (which a busy machine lengthens, and the hold doesn't); nothing for the cold one.
    private func showsTheKnownWorkload(
        _ report: ContentionReport, hot: String, cold: String, measured: Duration
    ) -> Bool {
        let known = Duration.milliseconds(holdMilliseconds * rounds)
        guard let instance = report.instances.first(where: { $0.label == hot }) else { return false }
        let waited = instance.totalWait
        return report.instances.allSatisfy { $0.label != cold }
            && instance.type == "Exclusive<Int>"
            && instance.contentions == rounds
            && waited >= known * 0.8 && waited <= measured
            && instance.maxWait <= measured
            && instance.waiters.map(\.site) == [
                ContentionReport.Site(file: file, line: waiterLine.load(ordering: .relaxed))
            ]
            && instance.holders.first?.site
                == ContentionReport.Site(file: file, line: holderLine.load(ordering: .relaxed))
            && instance.holders.first?.count == rounds
    }

    @Test func theKnownWorkloadIsReportedWithItsSitesAndWait() async throws {
        let (hot, cold) = (unique("hot"), unique("cold"))
        let (report, measured) = try await knownWorkload(
            hot: Exclusive(0, label: hot), cold: Exclusive(0, label: cold))
        #expect(showsTheKnownWorkload(report, hot: hot, cold: cold, measured: measured), "\(report)")
        // The profile's wait is the waiter's own, less what the access does besides waiting (its
        // spin, and on a busy machine any preemption before or after the wait: no share of the
        // measured time is promised, only the holds it must have waited out, above).
        let waited = report.instances.first { $0.label == hot }?.totalWait ?? .zero
        #expect(waited <= measured, "profile \(waited), measured \(measured)")
        #expect(report.description.contains("\"\(hot)\" Exclusive<Int>"))
        #expect(report.description.contains("waited at \(file):\(waiterLine.load(ordering: .relaxed))"))
        #expect(report.description.contains("held by \(file):\(holderLine.load(ordering: .relaxed))"))
    }

    @Test(arguments: PlantedBug.allCases)
    func theCheckCatchesAPlantedBug(_ bug: PlantedBug) async throws {
        let (hot, cold) = (unique("hot"), unique("cold"))
        let (report, measured) = try await knownWorkload(hot: Exclusive(0, label: hot), cold: Exclusive(0, label: cold))
        #expect(showsTheKnownWorkload(report, hot: hot, cold: cold, measured: measured), "\(report)")
        #expect(!showsTheKnownWorkload(broken(report, bug.plant), hot: hot, cold: cold, measured: measured), "\(bug)")
    }

    /// A task that awaits an instance a thread holds for a while, profiled.
    private func profiledTaskWait(label: String) async -> ContentionReport.Instance? {
        let box = Exclusive(0, label: label)
        let profile = ContentionProfile.start()
        let inside = Flag()
        let leave = Flag()
        defer { leave.raise() }  // on every path out: the holder waits for it without a limit
        onNewThread {
            box.access { _ in
                inside.raise()
                leave.waitUntilRaised()
            }
        }
        _ = await eventually { inside.isRaised }
        // The task suspends: its turn comes once the thread leaves.
        async let awaited: Void = box.access { $0 += 1 }
        _ = await eventually { box._engine._backlog.hasPending }
        leave.raise()
        await awaited
        return profile.stop().instances.first { $0.label == label }
    }

    @Test func aSuspendedAwaitIsATaskWait() async {
        let instance = await profiledTaskWait(label: unique("awaited"))
        #expect(instance?.byKind[.suspendedTask]?.count == 1)
        #expect(instance?.byKind[.blockedThread] == nil)
        #expect(instance?.contentions == 1)
        #expect(instance?.waiters.first?.site?.file == file)
    }

    /// A thread that waits for a condition another access makes true, profiled: the report.
    private func profiledConditionWait(label: String) async -> ContentionReport {
        let box = Exclusive(0, label: label)
        let profile = ContentionProfile.start()
        let waiter = BlockingCall { _ = try? box.access(when: { $0 > 0 }) { $0 += 1 } }
        // In line, and the state let go of: the access below must not wait for the lock (that
        // would be contention of its own, which a busy machine makes likely).
        #expect(await eventually { box._engine._waitList.waiting == 1 && isFree(box) })
        await box.access { $0 = 1 }
        _ = try? await waiter.value()
        return profile.stop()
    }

    /// Whether a condition wait was reported as such, and not as contention.
    private func isAConditionWait(_ instance: ContentionReport.Instance?) -> Bool {
        guard let instance else { return false }
        return instance.conditionWaits == 1 && instance.totalWait < instance.conditionWait
            && instance.conditionWaiters.first?.site?.file == file
    }

    @Test func aConditionWaitIsNotContention() async {
        let label = unique("condition")
        #expect(isAConditionWait(await profiledConditionWait(label: label).instances.first { $0.label == label }))
    }

    /// A task that awaits a condition another access makes true, profiled: its turn comes while the
    /// condition is false, so it waits in the wait list until the access.
    private func profiledAwaitedConditionWait(label: String) async -> ContentionReport.Instance? {
        let box = Exclusive(0, label: label)
        let profile = ContentionProfile.start()
        let waiter = onADedicatedThread { try? await box.access(when: { $0 > 0 }) { $0 += 1 } }
        // In line, and the state let go of (its turn ran on a drain that may still hold it).
        #expect(await eventually { box._engine._waitList.waiting == 1 && isFree(box) })
        await box.access { $0 = 1 }
        _ = await waiter.outcome()
        return profile.stop().instances.first { $0.label == label }
    }

    @Test func anAwaitedConditionWaitIsNotContention() async {
        let instance = await profiledAwaitedConditionWait(label: unique("awaited condition"))
        #expect(instance?.conditionWaits == 1)
        #expect(instance?.contentions == 0, "\(String(describing: instance))")
        #expect(instance?.byKind[.suspendedTask] == nil)
    }

    @Test func theCheckCatchesAConditionWaitCountedAsContention() async {
        let label = unique("condition")
        let counted = broken(await profiledConditionWait(label: label)) { row in
            guard row.kind == .condition else { return }
            row = ContentionReport.Row(
                label: row.label, type: row.type, kind: .blockedThread, waiter: row.waiter, holder: row.holder,
                count: row.count, nanoseconds: row.nanoseconds, longest: row.longest)
        }
        #expect(!isAConditionWait(counted.instances.first { $0.label == label }), "\(counted)")
    }

    // Linux's own lock only: nothing spins on Apple platforms.
    #if os(Linux) && !EXCLUSION_PORTABLE_LOCK
    /// Short waits, profiled: in each round one thread holds `box` and lets go a few microseconds
    /// after another is about to access it, so that many waits end while the waiter still spins.
    /// Returns the report's instance, and the waiter's own measure of its accesses.
    private func shortWaits(label: String) async -> (ContentionReport.Instance?, Duration) {
        let box = Exclusive(0, label: label)
        let profile = ContentionProfile.start()
        let turn = Turns()
        let rounds = 300
        let measuredNanoseconds = Atomic<Int>(0)
        // A workload of rounds that hand the state back and forth, limited by its progress: on a
        // busy machine each hand-off waits for a processor, and the whole takes as long as it
        // takes, but a round that never ends fails the test.
        await onThreads(2, rounds: rounds) { thread, index in
            let round = index + 1
            if thread == 0 {
                // The waiter's last round is over: it waits for this one, not the last.
                _ = spin(until: { turn.done.load(ordering: .sequentiallyConsistent) == round - 1 })
                box.access { _ in
                    turn.go.store(round, ordering: .sequentiallyConsistent)
                    // Lets go as soon as the waiter is about to access, or a little later:
                    // without yielding, so that it lets go within the waiter's spin.
                    let deadline = ContinuousClock.now + .seconds(10)
                    while turn.arrived.load(ordering: .sequentiallyConsistent) != round,
                        ContinuousClock.now < deadline
                    {}
                    let end = ContinuousClock.now + .nanoseconds(250 * (round % 3))
                    while ContinuousClock.now < end {}
                }
            } else {
                _ = spin(until: { turn.go.load(ordering: .sequentiallyConsistent) == round })
                let start = ContinuousClock.now
                turn.arrived.store(round, ordering: .sequentiallyConsistent)
                box.access { $0 += 1 }
                let (seconds, attoseconds) = (ContinuousClock.now - start).components
                measuredNanoseconds.add(
                    Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000), ordering: .relaxed)
                turn.done.store(round, ordering: .sequentiallyConsistent)
            }
        }
        let measured = Duration.nanoseconds(measuredNanoseconds.load(ordering: .relaxed))
        return (profile.stop().instances.first { $0.label == label }, measured)
    }

    @Test func waitsWithinTheSpinAreLeftOutAndTheRestNameTheirHolders() async {
        // Most of these waits end within the lock's spin and aren't recorded; those that slept
        // are, each with the holder it took over from (or none, if that let go before the waiter
        // counted itself), and never more than the waiter measured.
        let (instance, measured) = await shortWaits(label: unique("short waits"))
        guard let instance else { return }
        #expect(instance.totalWait <= measured)
        #expect(instance.holders.reduce(0) { $0 + $1.count } == instance.contentions)
        #expect(instance.holders.allSatisfy { $0.site == nil || $0.site?.file == file }, "\(instance.holders)")
    }
    #endif

    @Test func waitsAddUpPerRowAndStripesMergeIntoOneRow() {
        let names = { ("striped", "Exclusive<Int>") }
        let key = { (line: UInt) in
            _ContentionKey(
                instance: ObjectIdentifier(ContentionReport.self), kind: .blockedThread,
                waiter: _Site("File.swift", line), holder: .none)
        }
        var one = _ContentionRows()
        var other = _ContentionRows()
        for (line, wait) in [(3, 1), (3, 2), (4, 5)] as [(UInt, UInt64)] {
            one.add(key(line), nanoseconds: wait * 1_000, sampleEvery: 1, names: names)
        }
        other.add(key(3), nanoseconds: 7_000, sampleEvery: 1, names: names)
        one.merge(other)
        let instance = ContentionReport(rows: one.reportRows, dropped: 0, sampling: .all, duration: 1)
            .instances.first
        #expect(instance?.contentions == 4)
        let waiters = Dictionary(uniqueKeysWithValues: (instance?.waiters ?? []).map { ($0.site?.line ?? 0, $0) })
        #expect(waiters[3]?.count == 3 && waiters[3]?.wait == .microseconds(10), "\(String(describing: instance))")
        #expect(waiters[4]?.count == 1 && waiters[4]?.wait == .microseconds(5))
        #expect(instance?.maxWait == .microseconds(7))
    }

    // Where the tests can decompress gzip (Support/Gunzip.swift).
    #if CHILD_PROCESSES || canImport(Darwin)
    @Test func thePprofFileDecodesWithItsSampleTypesAndLabels() async throws {
        let (hot, cold) = (unique("hot"), unique("cold"))
        let (report, _) = try await knownWorkload(hot: Exclusive(0, label: hot), cold: Exclusive(0, label: cold))
        let profile = try Pprof(gzipped: report.pprof())
        #expect(profile.sampleTypes == [["contentions", "count"], ["delay", "nanoseconds"]])
        let samples = profile.samples.filter { $0.labels["label"] == hot }
        #expect(samples.count == 1, "\(report)")
        #expect(samples.first?.values.first == Int64(rounds))
        #expect(samples.first?.labels["wait"] == "blocked thread")
        let known = Int64(holdMilliseconds * rounds) * 1_000_000
        #expect((samples.first?.values.last ?? 0) >= known * 8 / 10)
        // Innermost first: the holder, the waiter, the instance.
        #expect(
            samples.first?.frames == [
                "held by \(file):\(holderLine.load(ordering: .relaxed))",
                "waited at \(file):\(waiterLine.load(ordering: .relaxed))", "Exclusive<Int> \"\(hot)\"",
            ])
        #expect(samples.first?.lines == [holderLine.load(ordering: .relaxed), waiterLine.load(ordering: .relaxed), 0])
    }

    @Test func thePprofFileLabelsEachSampleWithTheInstancesTypeAndLeavesConditionWaitsOut() async throws {
        // One contended instance and one with only a condition wait, in one profile.
        let (contended, waitedFor) = (unique("contended"), unique("waited for"))
        let box = Exclusive(0, label: contended)
        let condition = Exclusive(0, label: waitedFor)
        let profile = ContentionProfile.start()
        let inside = Flag()
        let leave = Flag()
        let holder = BlockingCall {
            box.access { _ in
                inside.raise()
                leave.wait()
            }
        }
        #expect(await eventually { inside.isRaised })
        let blocked = BlockingCall { box.access { $0 += 1 } }
        // Counted by the profile past its spin, as it goes to sleep on the lock.
        #expect(await eventually { box._engine._releaseWork.hasProfiledWaiters })
        leave.raise()
        _ = try await holder.value()
        _ = try await blocked.value()
        let waiter = BlockingCall { _ = try? condition.access(when: { $0 > 0 }) { $0 += 1 } }
        // In line, and the state let go of: the access below must not wait for the lock.
        #expect(await eventually { condition._engine._waitList.waiting == 1 && isFree(condition) })
        await condition.access { $0 = 1 }
        _ = try await waiter.value()
        let report = profile.stop()
        #expect(report.instances.first { $0.label == waitedFor }?.conditionWaits == 1, "\(report)")

        let samples = try Pprof(gzipped: report.pprof()).samples
        let ours = samples.filter { $0.labels["label"] == contended }
        #expect(!ours.isEmpty, "\(report)")
        #expect(ours.allSatisfy { $0.labels["type"] == "Exclusive<Int>" })
        #expect(ours.allSatisfy { $0.labels["wait"] == "blocked thread" })
        #expect(samples.allSatisfy { $0.labels["wait"] != "condition" && $0.labels["label"] != waitedFor })
    }

    @Test func theDecoderRefusesADamagedFile() async throws {
        let (report, _) = try await knownWorkload(
            hot: Exclusive(0, label: unique("hot")), cold: Exclusive(0, label: unique("cold")))
        let good = report.pprof()
        #expect(throws: (any Error).self) { try Pprof(gzipped: good.dropLast(9)) }  // a gzip cut short
        var bytes = try gunzip(good)
        bytes.removeLast(3)  // a protobuf cut short
        #expect(throws: (any Error).self) { try Pprof(protobuf: bytes) }
    }

    @Test func theDecoderRefusesWhatGosReaderRefuses() throws {
        // A profile of one sample at one location in one function, and copies that break one rule
        // of Go's reader each (Verification/pprof-check.sh shows Go refusing the same breaks in a
        // real profile). Each must be refused; the profile itself must not be.
        #expect(try Pprof(protobuf: tinyProfile()).samples.first?.frames == ["f"])
        let broken: [(String, [UInt8])] = [
            ("a location with id 0", tinyProfile(location: 0, sampleLocation: 0)),
            ("a function with id 0", tinyProfile(function: 0, lineFunction: 0)),
            ("a string table without \"\" first", tinyProfile(strings: ["contentions", "count", "f"])),
            ("a sample naming a location that isn't there", tinyProfile(sampleLocation: 2)),
            ("a line naming a function that isn't there", tinyProfile(lineFunction: 2)),
            ("more values than sample types", tinyProfile(values: [1, 2])),
            ("two locations with one id", tinyProfile(locations: 2)),
        ]
        for (what, bytes) in broken {
            #expect(throws: PprofError.self, "\(what)") { try Pprof(protobuf: bytes) }
        }
    }
    #endif

    #if CHILD_PROCESSES && canImport(Darwin)
    @Test func foundationsGunzipReadsWhatTheGzipToolReads() async throws {
        // iOS decompresses the profile with Foundation, having no `gzip` to run: checked here.
        let (report, _) = try await knownWorkload(
            hot: Exclusive(0, label: unique("hot")), cold: Exclusive(0, label: unique("cold")))
        let good = report.pprof()
        #expect(try gunzipWithFoundation(good) == gunzipWithTheGzipTool(good))
        #expect(throws: (any Error).self) { try gunzipWithFoundation(good.dropLast(9)) }  // cut short
        var damaged = good
        damaged[damaged.endIndex - 8] ^= 1  // the trailer's CRC-32
        #expect(throws: GzipError.checksumMismatch) { try gunzipWithFoundation(damaged) }
        // Every optional header field (RFC 1952), in its order, announced by the flags byte.
        var header = [UInt8](good.prefix(10))
        header[3] |= 0x1E
        header += [3, 0, 1, 2, 3]  // extra: its length, then that many bytes
        header += Array("profile.pb\0".utf8)  // name
        header += Array("comment\0".utf8)  // comment
        header += [0xAB, 0xCD]  // header CRC, which the reader doesn't check
        #expect(try gunzipWithFoundation(Data(header) + good.dropFirst(10)) == gunzipWithTheGzipTool(good))
    }
    #endif

    @Test func samplingOneInNRecordsEveryNthWaitAndScalesItBackUp() {
        // One stripe's rows, so that the count of waits is known: of five waits at one site, one
        // in two samples the second and the fourth, and the report counts each as two.
        var rows = _ContentionRows()
        let key = _ContentionKey(
            instance: ObjectIdentifier(ContentionReport.self), kind: .blockedThread,
            waiter: _Site("File.swift", 7), holder: .none)
        for wait in 1...5 {
            rows.add(key, nanoseconds: UInt64(wait) * 1_000, sampleEvery: 2) { ("sampled", "Exclusive<Int>") }
        }
        let instance = ContentionReport(rows: rows.reportRows, dropped: 0, sampling: .oneIn(2), duration: 1)
            .instances.first
        #expect(instance?.label == "sampled")
        #expect(instance?.contentions == 4)
        #expect(instance?.totalWait == .microseconds(12))  // (2 + 4) µs, twice
        #expect(instance?.maxWait == .microseconds(4))
    }

    @Test func anUncontendedRunReportsNothingOfItsOwn() async {
        let label = unique("alone")
        let box = Exclusive(0, label: label)
        let profile = ContentionProfile.start()
        for _ in 0..<1_000 { await box.access { $0 += 1 } }
        let report = profile.stop()
        #expect(report.instances.allSatisfy { $0.label != label })
    }
}

// MARK: - Reading pprof back

#if CHILD_PROCESSES || canImport(Darwin)
/// A pprof profile of one sample type, one sample, one location and one function, with the parts
/// `theDecoderRefusesWhatGosReaderRefuses` breaks given as arguments; written with the library's
/// own encoding helpers, which only write varints and fields.
private func tinyProfile(
    strings: [String] = ["", "contentions", "count", "f"], location: Int64 = 1, locations: Int = 1,
    function: Int64 = 1, lineFunction: Int64 = 1, sampleLocation: Int64 = 1, values: [UInt64] = [1]
) -> [UInt8] {
    var profile: [UInt8] = []
    let nameIndex = Int64(strings.firstIndex(of: "f") ?? 0)
    _PprofBuilder.append(1, _PprofBuilder.message([(1, 1), (2, 2)]), to: &profile)
    var sample: [UInt8] = []
    _PprofBuilder.append(1, _PprofBuilder.varint(UInt64(bitPattern: sampleLocation)), to: &sample)
    _PprofBuilder.append(2, values.flatMap { _PprofBuilder.varint($0) }, to: &sample)
    _PprofBuilder.append(2, sample, to: &profile)
    for _ in 0..<locations {
        var entry = _PprofBuilder.message([(1, location)])
        _PprofBuilder.append(4, _PprofBuilder.message([(1, lineFunction), (2, 7)]), to: &entry)
        _PprofBuilder.append(4, entry, to: &profile)
    }
    _PprofBuilder.append(5, _PprofBuilder.message([(1, function), (2, nameIndex)]), to: &profile)
    for text in strings { _PprofBuilder.append(6, Array(text.utf8), to: &profile) }
    return profile
}
#endif

/// Whether no access holds `value`, nor is it promised to a waiter: checked by taking it if that
/// needs no waiting (which no profile counts), for a test that must start an access that won't
/// wait for the lock. (`isAccessing` can't tell: it asks about the calling thread.)
private func isFree(_ value: Exclusive<Int>) -> Bool {
    value.accessIfAvailable { _ in true } ?? false
}
