import Dispatch
import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

@testable import Documents

private let text = Data("hello world".utf8)

/// A loop over `manager.allDocsValues` on a task of its own, recording every list it is given;
/// made once its iterator exists.
private struct Watching {
    let seen = Recorder<[String]>()
    let loop: Task<Void, Never>

    init(_ manager: DocumentManager) async {
        let started = Flag()
        let seen = seen
        let names = manager.allDocsValues  // the loop holds the sequence, not the manager
        loop = onADedicatedThread {
            var iterator = names.makeAsyncIterator()
            started.raise()
            while let names = await iterator.next(isolation: nil) { seen.record(names) }
        }
        _ = await eventually { started.isRaised }
    }

    /// Whether a list satisfying `condition` arrives within the patience for an event.
    func sees(_ condition: @escaping @Sendable ([String]) -> Bool) async -> Bool {
        await eventually { seen.values.contains(where: condition) }
    }

    func stop() async {
        loop.cancel()
        _ = await loop.outcome()
    }
}

#if CHILD_PROCESSES
/// Whether another manager's commit reaches a loop over `allDocsValues` while every thread of Swift's
/// shared pool is busy: the calling task blocks one, detached tasks the others, until the name has
/// arrived or the patience for an event has passed. The loop and the commit run on threads of
/// their own; only the looking at the store could need the pool.
private func anotherManagersCommitArrivesWhileThePoolIsBusy() async -> Bool {
    let folder = TemporaryFolder()
    defer { folder.remove() }
    guard let here = try? DocumentManager(directory: folder.url),
        let elsewhere = try? DocumentManager(directory: folder.url)
    else { return false }
    let arrived = Flag()
    let names = here.allDocsValues
    let loop = onADedicatedThread {
        for await names in names where names.contains("x.txt") {
            arrived.raise()
            break
        }
    }
    let release = Flag()
    let holding = Recorder<Bool>()
    let others = ProcessInfo.processInfo.activeProcessorCount - 1
    for _ in 0..<others {
        Task.detached {
            holding.record(true)
            release.wait()
        }
    }
    _ = spin(until: { holding.count == others }, timeout: patience)
    onADedicatedThread { _ = try? await elsewhere.save(text, as: "x.txt") }
    let seen = arrived.wait(timeout: patience)
    release.raise()
    loop.cancel()
    return seen
}
#endif

@Suite("DocumentManager names", .patientTimeLimit(minutes: 10))
struct DocumentNamesTests {
    @Test func theFirstListIsTheNamesNowThenEachChange() async throws {
        let manager = DocumentManager()
        manager.addDocumentName("a.txt")
        _ = manager.allDocs  // this thread's next allDocs includes it: the name is in
        let watching = await Watching(manager)
        #expect(await watching.sees { $0 == ["a.txt"] })
        _ = try await manager.save(text, as: "b.txt")
        #expect(await watching.sees { $0 == ["a.txt", "b.txt"] })
        try await manager.remove("a.txt")
        #expect(await watching.sees { $0 == ["b.txt"] })
        await watching.stop()
        // In order, and never the same list twice in a row.
        let lists = watching.seen.values
        #expect(lists.first == ["a.txt"])
        #expect(lists.last == ["b.txt"])
        #expect(zip(lists, lists.dropFirst()).allSatisfy { $0 != $1 })
    }

    @Test func namesAnotherProcessCommitsArriveWhileTheLoopWaits() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let here = try DocumentManager(directory: folder.url)
        let watching = await Watching(here)
        // Another manager on the same store stands for another process: it shares nothing with
        // `here` but the database file.
        let elsewhere = try DocumentManager(directory: folder.url)
        _ = try await elsewhere.save(text, as: "from-elsewhere.txt")
        // Nothing here asks for allDocs: only the loop's looking at the store brings the name in.
        #expect(await watching.sees { $0.contains("from-elsewhere.txt") })
        await watching.stop()
    }

    #if CHILD_PROCESSES
    @Test func theStoreIsLookedAtWhileEveryThreadOfTheSharedPoolIsBusy() async {
        // In a process of its own, since it takes every thread of Swift's shared pool.
        await offTheSharedPool {
            await #expect(processExitsWith: .success) {
                stopIfStuck()
                if !(await anotherManagersCommitArrivesWhileThePoolIsBusy()) { exit(1) }
            }
        }
    }
    #endif

    @Test func endingTheLoopStopsLookingAtTheStore() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let manager = try DocumentManager(directory: folder.url)
        let changed = onADedicatedThread { [names = manager.allDocsValues] in
            for await names in names where names.contains("x.txt") { break }
        }
        #expect(await eventually { manager.storeWatches.load(ordering: .relaxed) == 1 })
        _ = try await manager.save(text, as: "x.txt")
        _ = await changed.outcome()
        #expect(manager.storeWatches.load(ordering: .relaxed) == 0)

        let cancelled = onADedicatedThread { [names = manager.allDocsValues] in
            for await _ in names {}
        }
        #expect(await eventually { manager.storeWatches.load(ordering: .relaxed) == 1 })
        cancelled.cancel()
        _ = await cancelled.outcome()
        #expect(manager.storeWatches.load(ordering: .relaxed) == 0)
    }

    @Test func theSequenceEndsWhenTheManagerGoesAway() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let ended = Flag()
        do {
            let manager = try DocumentManager(directory: folder.url)
            let names = manager.allDocsValues
            onADedicatedThread {
                for await _ in names {}
                ended.raise()
            }
            _ = try await manager.save(text, as: "a.txt")
        }
        #expect(await eventually { ended.isRaised })
    }

    @MainActor @Test func aLoopOnTheMainActorIsGivenItsNamesThere() async throws {
        let manager = DocumentManager()
        let given = await onTheMainActor { () -> [[String]?] in
            var iterator = manager.allDocsValues.makeAsyncIterator()
            let first = await iterator.next(isolation: #isolation)
            manager.addDocumentName("a.txt")
            let names = await iterator.next(isolation: #isolation)
            MainActor.assertIsolated("names given off the main actor")
            dispatchPrecondition(condition: .onQueue(.main))
            return [first, names]
        }
        #expect(given == [[], ["a.txt"]])
    }
}
