import Benchmark
import Dispatch
import Exclusion
import Synchronization

// An access while a `for await` loop watches the value, against the same access with nobody
// watching and against the hand-written way to feed such a loop: a `Mutex` whose every change
// yields into an `AsyncStream` that keeps the newest element. Each row counts thousands of
// accesses from this thread (like "Exclusive.access"), and is timed until the loop has been given
// the final value.

/// A loop on a task of its own over `values`, waiting for its first element before this returns,
/// that ends once it is given `last`.
final class LatestValueConsumer: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let loop: Task<Void, Never>

    init<Values: AsyncSequence<Int, Never> & Sendable>(_ values: Values, until last: Int) {
        let started = DispatchSemaphore(value: 0)
        let done = done
        loop = Task.detached {
            var iterator = values.makeAsyncIterator()
            var value = await iterator.next(isolation: nil)
            started.signal()
            while value != nil, value != last { value = await iterator.next(isolation: nil) }
            done.signal()
        }
        started.wait()
    }

    /// Waits until the loop was given the final value.
    func wait() { done.wait() }
}

/// The peer: a counter under a `Mutex` that yields every new value into an `AsyncStream` keeping
/// only the newest, outside the lock, as a careful hand-written version would.
final class StreamedCounter: Sendable {
    private let value = Mutex(0)
    let stream: AsyncStream<Int>
    private let continuation: AsyncStream<Int>.Continuation

    init() {
        (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
        continuation.yield(0)
    }

    func increment() {
        let new = value.withLock {
            $0 &+= 1
            return $0
        }
        continuation.yield(new)
    }
}

func valuesBenchmarks() {
    Benchmark("Exclusive.access, one values consumer") { benchmark in
        let counter = Exclusive(0)
        let consumer = LatestValueConsumer(counter.values { $0 }, until: benchmark.scaledIterations.count * 1_000)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { counter.access { $0 &+= 1 } } }
        consumer.wait()
    }
    Benchmark("peer: Mutex and AsyncStream (newest 1), one consumer") { benchmark in
        let counter = StreamedCounter()
        let consumer = LatestValueConsumer(counter.stream, until: benchmark.scaledIterations.count * 1_000)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { counter.increment() } }
        consumer.wait()
    }
}
