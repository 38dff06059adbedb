import Benchmark
import Dispatch
import Exclusion
import Foundation

// Each benchmark runs a batch of operations per iteration (the scaling factor), so its time is
// per operation. Creating the instance is setup, not measured. Peers of each operation sit beside
// it, named "peer: ...", so one run gives the ratios in README.md (`python3 ratios.py`).
//
// ordo-one reports whole nanoseconds, which would round a 9 ns operation by up to 5 %. The
// single-threaded rows therefore count thousands of operations (`.kilo`, each a thousand
// operations), so they read in picoseconds per operation; `ratios.py` divides them back.

/// Benchmarks that start threads run a million operations per iteration, so starting the threads
/// (tens of microseconds) doesn't show in the time per operation. Counted in thousands, like the
/// single-threaded rows.
var threaded: Benchmark.Configuration {
    .init(
        metrics: [.wallClock], timeUnits: .nanoseconds, scalingFactor: .kilo, maxDuration: .seconds(3),
        maxIterations: 30)
}

/// Contended accesses with work in them: one iteration is 10,000 accesses, timed in microseconds.
var contended: Benchmark.Configuration {
    .init(
        metrics: [.wallClock], timeUnits: .microseconds, scalingFactor: .one, maxDuration: .seconds(3),
        maxIterations: 30)
}

/// Submitting a million blocks, one per operation (hundreds of nanoseconds each: whole nanoseconds do).
var submitting: Benchmark.Configuration {
    .init(
        metrics: [.wallClock], timeUnits: .nanoseconds, scalingFactor: .mega, maxDuration: .seconds(3),
        maxIterations: 30)
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal],
        timeUnits: .nanoseconds,
        scalingFactor: .kilo,
        maxDuration: .seconds(2),
        maxIterations: 100
    )

    // MARK: - Exclusive.access, uncontended

    Benchmark("Exclusive.access") { benchmark in
        let counter = Exclusive(0)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { counter.access { $0 &+= 1 } } }
    }
    Benchmark("peer: NSLock") { benchmark in
        let counter = NSLockCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { counter.increment() } }
    }
    Benchmark("peer: Mutex") { benchmark in
        let counter = MutexCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { counter.increment() } }
    }
    Benchmark("peer: DispatchQueue.sync") { benchmark in
        let counter = SerialQueueCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { counter.increment() } }
    }

    // MARK: - Two threads contending

    Benchmark("Exclusive.access, 2 threads", configuration: threaded) { benchmark in
        accessesOnTwoThreads(benchmark.scaledIterations.count * 1_000 / 2)
    }
    Benchmark("peer: NSLock, 2 threads", configuration: threaded) { benchmark in
        let counter = NSLockCounter()
        benchmark.startMeasurement()
        let each = benchmark.scaledIterations.count * 1_000 / 2
        onThreads(2) { _ in for _ in 0..<each { counter.increment() } }
    }
    Benchmark("peer: DispatchQueue.sync, 2 threads", configuration: threaded) { benchmark in
        let counter = SerialQueueCounter()
        benchmark.startMeasurement()
        let each = benchmark.scaledIterations.count * 1_000 / 2
        onThreads(2) { _ in for _ in 0..<each { counter.increment() } }
    }

    // Contention with work in the body, where waiters spin and sleep: 10,000 accesses per
    // iteration, split over the threads, each doing `rounds` of arithmetic inside the access and
    // `outside` rounds between accesses (`busyWork` takes about 0.15 ns a round here).
    for (threads, rounds, outside, name) in [
        (2, 650, 650, "2 threads, 0.1 µs inside and out"), (4, 6_500, 0, "4 threads, 1 µs inside"),
    ] {
        Benchmark("Exclusive.access, \(name) (µs per 10,000)", configuration: contended) { benchmark in
            let counter = Exclusive(0)
            benchmark.startMeasurement()
            onThreads(threads) { _ in
                for _ in 0..<10_000 / threads {
                    counter.access { $0 = busyWork(rounds, $0) }
                    blackHole(busyWork(outside, 1))
                }
            }
        }
        Benchmark("peer: NSLock, \(name) (µs per 10,000)", configuration: contended) { benchmark in
            let counter = NSLockCounter()
            benchmark.startMeasurement()
            onThreads(threads) { _ in
                for _ in 0..<10_000 / threads {
                    counter.update { busyWork(rounds, $0) }
                    blackHole(busyWork(outside, 1))
                }
            }
        }
    }

    // MARK: - ReadersWriter.read

    Benchmark("ReadersWriter.read") { benchmark in
        let value = ReadersWriter(0)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { blackHole(value.read { $0 }) } }
    }
    Benchmark("peer: pthread_rwlock read") { benchmark in
        let value = RWLockValue()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { blackHole(value.read()) } }
    }
    Benchmark("peer: concurrent DispatchQueue.sync read") { benchmark in
        let value = ConcurrentQueueValue()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { blackHole(value.read()) } }
    }
    Benchmark("ReadersWriter.read, 2 threads", configuration: threaded) { benchmark in
        // The same total number of reads as the one-thread benchmark, split over two threads:
        // a time per read half of the one-thread time means twice the throughput.
        let value = ReadersWriter(0)
        benchmark.startMeasurement()
        let each = benchmark.scaledIterations.count * 1_000 / 2
        onThreads(2) { _ in for _ in 0..<each { blackHole(value.read { $0 }) } }
    }
    Benchmark("peer: pthread_rwlock read, 2 threads", configuration: threaded) { benchmark in
        let value = RWLockValue()
        benchmark.startMeasurement()
        let each = benchmark.scaledIterations.count * 1_000 / 2
        onThreads(2) { _ in for _ in 0..<each { blackHole(value.read()) } }
    }
    Benchmark("ReadersWriter.write") { benchmark in
        let value = ReadersWriter(0)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { value.write { $0 &+= 1 } } }
    }
    Benchmark("peer: concurrent DispatchQueue barrier sync") { benchmark in
        let value = ConcurrentQueueValue()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { value.write() } }
    }

    // MARK: - Asynchronous submission

    Benchmark("Exclusive.accessAsync, submit all then wait", configuration: submitting) { benchmark in
        let counter = Exclusive(0)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { counter.accessAsync { $0 &+= 1 } }
        blackHole(counter.access { $0 })
    }
    Benchmark("peer: DispatchQueue.async, submit all then wait", configuration: submitting) { benchmark in
        let counter = SerialQueueCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { counter.incrementAsync() }
        counter.waitForAll()
    }

    // MARK: - Swift concurrency

    // One access inside another: where the lock-order check would run. Off in release builds
    // unless EXCLUSION_LOCK_ORDER=1; run once each way to see what it costs.
    Benchmark("Exclusive.access nested in another") { benchmark in
        let outer = Exclusive(0, label: "outer")
        let inner = Exclusive(0, label: "inner")
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { outer.access { _ in inner.access { $0 &+= 1 } } } }
    }
    Benchmark("peer: NSLock nested in another") { benchmark in
        let outer = NSLockCounter()
        let inner = NSLockCounter()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { outer.withLock { inner.increment() } } }
    }

    // Both from a task on the global executor, as most callers are: an actor call from another
    // executor (the benchmark's own) pays for a hop that would make the actor look slow.
    Benchmark("await Exclusive.access") { benchmark in
        let counter = Exclusive(0)
        let count = benchmark.scaledIterations.count * 1_000
        benchmark.startMeasurement()
        await Task.detached { for _ in 0..<count { await counter.access { $0 &+= 1 } } }.value
    }
    Benchmark("peer: actor method call") { benchmark in
        let counter = CounterActor()
        let count = benchmark.scaledIterations.count * 1_000
        benchmark.startMeasurement()
        await Task.detached { for _ in 0..<count { await counter.increment() } }.value
    }

    // MARK: - Waiting for state

    waitingBenchmarks()

    // MARK: - The contention matrix

    contentionBenchmarks()
    valuesBenchmarks()
    profilingBenchmarks()
}

/// Runs `body` a thousand times: one "operation" of the single-threaded rows.
@inline(__always)
func thousandTimes(_ body: () -> Void) {
    for _ in 0..<1_000 { body() }
}

/// Two threads increment one counter `each` times apiece.
func accessesOnTwoThreads(_ each: Int) {
    let counter = Exclusive(0)
    onThreads(2) { _ in for _ in 0..<each { counter.access { $0 &+= 1 } } }
}
