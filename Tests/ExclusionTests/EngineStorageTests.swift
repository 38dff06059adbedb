import Dispatch
import ExclusionLockTesting
import ExclusionTestSupport
import Testing

@testable import Exclusion

// An instance is one object: the public instance's storage, which `ManagedBufferPointer` lays out and
// the engine reads at offsets of its own (so that a view of it retains nothing). The two must agree
// for every state, whatever its size and alignment.

/// `instance`'s engine finds its header and state where `ManagedBufferPointer` put them. (An engine
/// is a view that holds nothing: the instance must outlive it, as it does here.)
private func expectLayoutAgrees<Instance: AnyObject, State, Lock: _EngineLock>(
    _ instance: Instance, _ engine: (Instance) -> _Engine<State, Lock>,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    withExtendedLifetime(instance) {
        let engine = engine(instance)
        let buffer = _Engine<State, Lock>.Storage(unsafeBufferObject: instance)
        buffer.withUnsafeMutablePointers { header, state in
            #expect(
                UnsafeMutableRawPointer(header) == UnsafeMutableRawPointer(engine._header),
                sourceLocation: sourceLocation)
            #expect(
                UnsafeMutableRawPointer(state) == UnsafeMutableRawPointer(engine._state), sourceLocation: sourceLocation
            )
        }
    }
    #expect(MemoryLayout<_EngineHeader<Lock.Storage>>.offset(of: \.storage) == 0, sourceLocation: sourceLocation)
}

private struct Wide: Equatable {
    var a: (Int64, Int64, Int64, Int64) = (1, 2, 3, 4)
    var b: UInt8 = 5

    static func == (lhs: Wide, rhs: Wide) -> Bool { lhs.a == rhs.a && lhs.b == rhs.b }
}

/// Runs one job submitted to `counter` with `accessAsync`, which adds 1, and returns the side
/// structures it ran with, taken inside the job: a drain holds the state then, so they can't go
/// while they are looked up. (A look from outside could meet a drain that ends and lets them go.)
private func sideStructuresOfASubmittedJob(_ counter: Exclusive<Int>) async -> _EngineSide<Int> {
    await withCheckedContinuation { (done: CheckedContinuation<_EngineSide<Int>, Never>) in
        counter.accessAsync {
            $0 += 1
            done.resume(returning: counter._engine._side)
        }
    }
}

@Suite("An instance's storage")
struct EngineStorageTests {
    @Test func theEngineFindsTheStateAndHeaderWhereTheBufferPutThem() {
        expectLayoutAgrees(Exclusive(7)) { $0._engine }
        expectLayoutAgrees(Exclusive(UInt8(7))) { $0._engine }
        expectLayoutAgrees(Exclusive("a string of some length, past the small-string limit")) { $0._engine }
        expectLayoutAgrees(Exclusive(SIMD4<Float>(1, 2, 3, 4))) { $0._engine }
        expectLayoutAgrees(Exclusive(Wide())) { $0._engine }
        expectLayoutAgrees(Exclusive(())) { $0._engine }
        expectLayoutAgrees(ReadersWriter(7)) { $0._engine }
        expectLayoutAgrees(ReadersWriter(SIMD4<Float>(1, 2, 3, 4))) { $0._engine }
        expectLayoutAgrees(ReadersWriter(Wide())) { $0._engine }
    }

    @Test func theStateIsWhatTheAccessesSee() {
        let wide = Exclusive(Wide())
        #expect(wide.access { $0 } == Wide())
        wide.access { $0.b = 9 }
        #expect(wide._engine._state.pointee.b == 9)
        let vector = ReadersWriter(SIMD4<Float>(1, 2, 3, 4))
        #expect(vector.read { $0 } == SIMD4<Float>(1, 2, 3, 4))
    }

    @Test func theDefaultLabelIsTheTypeAndAGivenOneIsKept() {
        #expect(Exclusive(0).label == "Exclusive<Int>")
        #expect(ReadersWriter([String]()).label == "ReadersWriter<Array<String>>")
        #expect(Exclusive(0, label: "ledger").label == "ledger")
        #expect(ReadersWriter(0, label: "").label == "")
    }

    @Test func aNewInstanceHasNoSideStructures() {
        let counter = Exclusive(0)
        counter.access { $0 += 1 }
        // Watched or not: where a watched access entered is noted in the instance itself.
        #expect(!counter._engine._hasSide)
        // Submitted work makes them; looked at with the state held, before a drain that ends can
        // let them go again.
        let made = counter.access { _ in
            counter.accessAsync { $0 += 1 }
            return counter._engine._hasSide
        }
        #expect(made)
    }

    @Test func workSubmittedMakesNoWaitListAndItsDrainLetsItsQueueGo() async {
        let counter = Exclusive(0)
        for round in 1...2 {
            let side = await sideStructuresOfASubmittedJob(counter)
            // Only conditions and awaited turns wait in the list, and only a profile takes notes:
            // submitted work needs neither.
            #expect(side.existingWaitList == nil)
            #expect(side.existingProfile == nil)
            // The drain ends once it has run the job (after lingering for a moment); its queue goes
            // with it, and the next drain makes another.
            #expect(
                await eventually(for: "drain \(round) to let its queue go") { !side.backlog._holdsDrainQueue })
            #expect(await counter.access { _ in side.backlog._room } == 0)
        }
        #expect(await counter.access { $0 } == 2)
    }

    @Test func sideStructuresThatAreKeptKeepTheirDrainQueueBetweenDrains() async {
        // An instance whose side structures are kept (here as a condition's wait would keep them)
        // is drained again and again, each turn of a `values` loop being a submission: its drains
        // run on one queue, not on a new one each.
        let counter = Exclusive(0)
        counter._engine._withKeptSide { _ in }
        var queues: [ObjectIdentifier?] = []
        for round in 1...3 {
            let side = await sideStructuresOfASubmittedJob(counter)
            #expect(await eventually(for: "drain \(round) to end") { !side.backlog._drainIsScheduled })
            queues.append(side.backlog._drainQueueIdentity)
        }
        #expect(queues[0] != nil)
        #expect(Set(queues).count == 1, "the drains ran on \(Set(queues).count) queues")
        #expect(await counter.access { $0 } == 3)
    }

    @Test func theSideStructuresAreOneSmallObjectWithTheBacklogInIt() async {
        // The side object, of 72 bytes: 80 where the allocator rounds to 16. (The backlog's two locks
        // are one allocation more, apart from the instance's words: see `_Backlog`.) The smallest
        // block of several: glibc may hand a request a free block 16 bytes larger than it asked
        // for, rather than split off a piece too small to use, and on a busy machine it did (88).
        var sides: [_EngineSide<Int>] = []
        var instances: [Exclusive<Int>] = []
        for _ in 0..<8 {
            let instance = Exclusive(0)
            instances.append(instance)
            sides.append(await sideStructuresOfASubmittedJob(instance))
        }
        #expect(sides.allSatisfy { $0.backlog === $0 })  // the backlog is the side structures' first part
        let sizes = sides.map { exclusion_testing_allocation_size(Unmanaged.passUnretained($0).toOpaque()) }
        #expect(sizes.min()! <= 80, "blocks of \(sizes) bytes")
        withExtendedLifetime(instances) {}
    }

    @Test func aBacklogLetsItsRoomGoOnceABurstIsOver() async {
        // Five bursts, each on an instance of its own: whether the drain's last swap leaves the
        // backlog an array with room depends on when the reading access below comes, so a backlog
        // that kept its room showed in most bursts, not all (an audit once missed it).
        for _ in 0..<5 {
            let counter = Exclusive(0)
            let gate = DispatchSemaphore(value: 0)
            // The first job holds the state in its drain, on the drain's own thread, while the
            // burst piles up behind it: a batch of its own, after which the burst's batch is
            // already coming.
            await withCheckedContinuation { (started: CheckedContinuation<Void, Never>) in
                counter.accessAsync { _ in
                    started.resume()
                    gate.wait()
                }
            }
            for _ in 0..<1_000 { counter.accessAsync { $0 += 1 } }
            // Taken while the drain runs, and held: a quiet instance lets its side structures go
            // when the drain ends, and one that keeps them (it waited for a condition) must not
            // keep the burst's room with them.
            let backlog = counter._engine._backlog
            gate.signal()
            #expect(await counter.access { $0 } == 1_000)
            // Once the drain has ended, nothing is coming: the backlog keeps no room.
            let ended = await eventually(for: "the drain to end") { !backlog._drainIsScheduled }
            #expect(ended)
            let room = await counter.access { _ in backlog._room }
            #expect(room == 0, "the backlog keeps room for \(room) jobs once a burst of 1,000 is over")
            guard ended, room == 0 else { return }  // Failed: the next bursts would only wait again.
        }
    }
}
