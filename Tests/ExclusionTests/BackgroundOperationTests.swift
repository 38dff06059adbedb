import Dispatch
import Exclusion
import ExclusionTestSupport
import Foundation
import Testing

private struct Failure: Error, Equatable {
    let code: Int
}

@Suite("BackgroundOperation", .patientTimeLimit(minutes: 10))
struct BackgroundOperationTests {
    @Test func deliversTheResultOnTheGivenQueue() async throws {
        let queue = DispatchQueue(label: "results")
        let operations = OperationQueue()
        let result: Result<Int, any Error> = await withCheckedContinuation { continuation in
            operations.addOperation(
                BackgroundOperation(deliverOn: queue, work: { _ in 6 * 7 }) { result in
                    dispatchPrecondition(condition: .onQueue(queue))
                    continuation.resume(returning: result)
                })
        }
        #expect(try result.get() == 42)
    }

    @Test func deliversOnTheMainQueueByDefault() async {
        let operations = OperationQueue()
        await withCheckedContinuation { continuation in
            operations.addOperation(
                BackgroundOperation(work: { _ in "done" }) { _ in
                    dispatchPrecondition(condition: .onQueue(.main))
                    continuation.resume()
                })
        }
    }

    @Test func workRunsOffTheDeliveryQueue() async {
        let queue = DispatchQueue(label: "results")
        let operations = OperationQueue()
        let ranOnDeliveryQueue: Bool = await withCheckedContinuation { continuation in
            let key = DispatchSpecificKey<Bool>()
            queue.setSpecific(key: key, value: true)
            operations.addOperation(
                BackgroundOperation(deliverOn: queue, work: { _ in DispatchQueue.getSpecific(key: key) ?? false }) {
                    continuation.resume(returning: (try? $0.get()) ?? true)
                })
        }
        #expect(!ranOnDeliveryQueue)
    }

    @Test func errorsReachTheCompletion() async {
        let operations = OperationQueue()
        let result: Result<Int, any Error> = await withCheckedContinuation { continuation in
            operations.addOperation(
                BackgroundOperation(deliverOn: .global(), work: { _ in throw Failure(code: 3) }) {
                    continuation.resume(returning: $0)
                })
        }
        #expect(throws: Failure(code: 3)) { try result.get() }
    }

    @Test func cancelledBeforeItRunsItDeliversCancellationAndSkipsTheWork() async {
        let operations = OperationQueue()
        operations.isSuspended = true
        let ran = Flag()
        let result: Result<Int, any Error> = await withCheckedContinuation { continuation in
            let operation = BackgroundOperation(
                deliverOn: .global(),
                work: { _ in
                    ran.raise()
                    return 1
                }, completion: { continuation.resume(returning: $0) })
            operations.addOperation(operation)
            operation.cancel()
            operations.isSuspended = false
        }
        #expect(throws: CancellationError.self) { try result.get() }
        #expect(!ran.isRaised)
    }

    @Test func workCanNoticeCancellationAndStopEarly() async {
        let operations = OperationQueue()
        let started = Flag()
        let result: Result<Int, any Error> = await withCheckedContinuation { continuation in
            let operation = BackgroundOperation(
                deliverOn: .global(),
                work: { operation in
                    started.raise()
                    while !operation.isCancelled { usleep(100) }
                    throw CancellationError()
                }, completion: { continuation.resume(returning: $0) })
            operations.addOperation(operation)
            started.wait()
            operation.cancel()
        }
        #expect(throws: CancellationError.self) { try result.get() }
    }

    @Test func everyOperationDeliversExactlyOnce() async {
        let operations = OperationQueue()
        operations.maxConcurrentOperationCount = 2
        let delivery = DispatchQueue(label: "delivery")
        let delivered = Recorder<Int>()
        let done = Countdown(200)
        var all: [Operation] = []
        for index in 0..<200 {
            let operation = BackgroundOperation(deliverOn: delivery, work: { _ in index }) { result in
                delivered.record((try? result.get()) ?? -1 - index)
                done.arrive()
            }
            all.append(operation)
        }
        for operation in all { operations.addOperation(operation) }
        for operation in all.suffix(50) { operation.cancel() }
        await done.wait()
        // Every operation has handed in its answer once it is finished; a second answer would be
        // on the delivery queue by then.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread {
                operations.waitUntilAllOperationsAreFinished()
                continuation.resume()
            }.start()
        }
        await drain(delivery)
        let values = delivered.values
        #expect(values.count == 200)
        #expect(Set(values.map { $0 < 0 ? -1 - $0 : $0 }).count == 200)
    }
}
