import Benchmark
import BenchmarkShims
import Dispatch
import Exclusion
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The contention matrix: `Exclusive.access` against `pthread_mutex_t` around the same work, on
// 2, 4, 8 and 16 threads, in four workloads. One iteration is 10,000 accesses split over the
// threads; each access holds the lock for `inside` nanoseconds of arithmetic, and each thread does
// `outside` nanoseconds between accesses. Every access also times its wait for the lock (the
// time-stamp counter, read the same way by both designs), and each iteration reports its longest
// single wait: a design that lets one thread wait for ever while others barge shows there, not in
// its time. `python3 contention.py` prints the matrix from three runs.

/// One iteration: 10,000 accesses, timed in microseconds.
var contentionMatrix: Benchmark.Configuration {
    .init(
        metrics: [.wallClock, longestWait], timeUnits: .microseconds, scalingFactor: .one,
        maxDuration: .seconds(1), maxIterations: 20)
}

let longestWait = BenchmarkMetric.custom("Longest wait (µs)", polarity: .prefersSmaller, useScalingFactor: false)

/// The workloads: nanoseconds inside the lock, nanoseconds between accesses, and the row's name.
let contentionWorkloads: [(inside: Int, outside: Int, name: String)] = [
    (100, 100, "0.1 µs inside and out"), (1_000, 0, "1 µs inside"), (1_000, 1_000, "1 µs inside and out"),
    (5_000, 0, "5 µs inside"),
]

func contentionBenchmarks() {
    let rounds = WorkCalibration.roundsPerNanosecond
    for threads in [2, 4, 8, 16] {
        for workload in contentionWorkloads {
            let inside = Int(Double(workload.inside) * rounds)
            let outside = Int(Double(workload.outside) * rounds)
            let name = "\(threads) threads, \(workload.name)"
            Benchmark("contention: Exclusive.access, \(name)", configuration: contentionMatrix) { benchmark in
                contendedAccesses(benchmark, threads: threads, inside: inside, outside: outside)
            }
            Benchmark("contention: peer: pthread_mutex_t, \(name)", configuration: contentionMatrix) { benchmark in
                let counter = PthreadMutexCounter()
                let longest = LongestWait()
                benchmark.startMeasurement()
                onThreads(threads) { _ in
                    var mine: UInt64 = 0
                    for _ in 0..<10_000 / threads {
                        let asked = benchmark_ticks()
                        counter.update { value in
                            mine = max(mine, benchmark_ticks() &- asked)
                            return busyWork(inside, value)
                        }
                        blackHole(busyWork(outside, 1))
                    }
                    longest.record(mine)
                }
                benchmark.stopMeasurement()
                benchmark.measurement(longestWait, longest.microseconds)
            }
        }
    }
}

/// One iteration of an `Exclusive.access` cell of the matrix, measured from the threads' start
/// until the last one is done.
func contendedAccesses(_ benchmark: Benchmark, threads: Int, inside: Int, outside: Int) {
    benchmark.startMeasurement()
    let longest = contendedRound(threads: threads, inside: inside, outside: outside)
    benchmark.stopMeasurement()
    benchmark.measurement(longestWait, longest.microseconds)
}

/// `threads` threads share 10,000 accesses to a new counter, holding it for `inside` rounds of
/// `busyWork` and doing `outside` rounds between accesses; returns once the last one is done.
@discardableResult
func contendedRound(threads: Int, inside: Int, outside: Int) -> LongestWait {
    let counter = Exclusive(0)
    let longest = LongestWait()
    onThreads(threads) { _ in
        var mine: UInt64 = 0
        for _ in 0..<10_000 / threads {
            let asked = benchmark_ticks()
            counter.access { value in
                mine = max(mine, benchmark_ticks() &- asked)
                value = busyWork(inside, value)
            }
            blackHole(busyWork(outside, 1))
        }
        longest.record(mine)
    }
    return longest
}

/// The longest wait any thread saw, in ticks.
final class LongestWait: Sendable {
    private let ticks = Atomic<UInt64>(0)

    func record(_ waited: UInt64) {
        var current = ticks.load(ordering: .relaxed)
        while waited > current {
            let (exchanged, original) = ticks.compareExchange(
                expected: current, desired: waited, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    var microseconds: Int { Int(Double(ticks.load(ordering: .relaxed)) / WorkCalibration.ticksPerNanosecond / 1_000) }
}

/// How fast `busyWork` and the tick counter run on this machine, measured once.
enum WorkCalibration {
    static let roundsPerNanosecond: Double = {
        var best = Double.infinity
        for _ in 0..<5 {
            let start = DispatchTime.now().uptimeNanoseconds
            // A seed the compiler can't know, so that it can't work the result out ahead.
            blackHole(busyWork(10_000_000, Int(truncatingIfNeeded: start)))
            best = min(best, Double(DispatchTime.now().uptimeNanoseconds - start))
        }
        return 10_000_000 / best
    }()

    static let ticksPerNanosecond: Double = {
        let startTicks = benchmark_ticks()
        let start = DispatchTime.now().uptimeNanoseconds
        while DispatchTime.now().uptimeNanoseconds - start < 20_000_000 {}
        return Double(benchmark_ticks() - startTicks) / Double(DispatchTime.now().uptimeNanoseconds - start)
    }()
}

/// A counter behind a `pthread_mutex_t`, the system's mutex, as a C or server program would use it.
final class PthreadMutexCounter: @unchecked Sendable {
    // @unchecked: value is only touched while mutex is held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value = 0

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func update(_ body: (Int) -> Int) {
        pthread_mutex_lock(mutex)
        value = body(value)
        pthread_mutex_unlock(mutex)
    }
}
