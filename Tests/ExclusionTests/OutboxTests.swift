import Dispatch
import Exclusion
import Foundation
import Testing

@Suite("Outbox")
struct OutboxTests {
    @Test func postedWorkRunsAfterTheAccessOnTheGivenQueue() async {
        let value = Exclusive(0)
        let queue = DispatchQueue(label: "notifications")
        let seen: Int = await withCheckedContinuation { continuation in
            syncAccessWithOutbox(value) { state, outbox in
                state = 5
                outbox.post(on: queue) {
                    dispatchPrecondition(condition: .onQueue(queue))
                    #expect(!value.isAccessing)
                    continuation.resume(returning: value.access { $0 })  // calls back in: no deadlock
                }
            }
        }
        #expect(seen == 5)
    }

    @Test func postsFromManyThreadsArriveInCommitOrder() async {
        // Each access stamps the next number and posts it; a serial queue must see 1, 2, 3, ...
        let counter = Exclusive(0)
        let queue = DispatchQueue(label: "notifications")
        let arrived = Recorder<Int>()
        let done = Countdown(4 * 2_000)
        await onThreads(4) { _ in
            for _ in 0..<2_000 {
                syncAccessWithOutbox(counter) { state, outbox in
                    state += 1
                    let stamp = state
                    outbox.post(on: queue) {
                        arrived.record(stamp)
                        done.arrive()
                    }
                }
            }
        }
        await done.wait()
        #expect(arrived.values == Array(1...8_000))
    }

    @Test func theOrderCheckCatchesPostingAfterTheAccessReturns() async {
        // The naive way, posting after the access returns, lets threads overtake each other.
        let counter = Exclusive(0)
        let queue = DispatchQueue(label: "notifications")
        let arrived = Recorder<Int>()
        let done = Countdown(4 * 2_000)
        await onThreads(4) { _ in
            for _ in 0..<2_000 {
                let stamp = syncAccess(counter) { state -> Int in
                    state += 1
                    return state
                }
                usleep(UInt32.random(in: 0...20))  // anything can come between the access and the post
                queue.async {
                    arrived.record(stamp)
                    done.arrive()
                }
            }
        }
        await done.wait()
        let inCommitOrder = arrived.values == Array(1...8_000)
        #expect(!inCommitOrder)
    }

    @Test func postsOfAThrowingAccessStillRun() async {
        struct Failure: Error {}
        let value = Exclusive(0)
        await withCheckedContinuation { continuation in
            #expect(throws: Failure.self) {
                try value.access { (state: inout Int, outbox: inout Outbox) throws(Failure) in
                    outbox.post(on: .global()) { continuation.resume() }
                    throw Failure()
                }
            }
        }
    }

    @Test func readersWriterWritesPostInCommitOrder() async {
        let counter = ReadersWriter(0)
        let queue = DispatchQueue(label: "notifications")
        let arrived = Recorder<Int>()
        let done = Countdown(2 * 2_000)
        await onThreads(2) { _ in
            for _ in 0..<2_000 {
                counter.write { (state: inout Int, outbox: inout Outbox) in
                    state += 1
                    let stamp = state
                    outbox.post(on: queue) {
                        arrived.record(stamp)
                        done.arrive()
                    }
                }
            }
        }
        await done.wait()
        #expect(arrived.values == Array(1...4_000))
    }
}

private func syncAccessWithOutbox(_ value: Exclusive<Int>, _ body: (inout Int, inout Outbox) -> Void) {
    value.access { state, outbox in body(&state, &outbox) }
}
