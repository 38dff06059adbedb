import Benchmark
import Exclusion
import Synchronization

// The cost of a contention profile: the same accesses as "Exclusive.access", "Exclusive.access,
// 2 threads" and two cells of the contention matrix, with `ContentionProfile.start(sampling: .all)`
// running. The profile starts before the measurement and stops after it (stopping, and making the
// report, is not measured: a program pays it once).

func profilingBenchmarks() {
    Benchmark("Exclusive.access, profiled") { benchmark in
        let counter = Exclusive(0)
        let profile = ContentionProfile.start(sampling: .all)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { counter.access { $0 &+= 1 } } }
        benchmark.stopMeasurement()
        blackHole(profile.stop())
    }
    Benchmark("Exclusive.access, 2 threads, profiled", configuration: threaded) { benchmark in
        let counter = Exclusive(0)
        let profile = ContentionProfile.start(sampling: .all)
        benchmark.startMeasurement()
        let each = benchmark.scaledIterations.count * 1_000 / 2
        onThreads(2) { _ in for _ in 0..<each { counter.access { $0 &+= 1 } } }
        benchmark.stopMeasurement()
        blackHole(profile.stop())
    }
    let rounds = WorkCalibration.roundsPerNanosecond
    for (threads, workload) in [(4, contentionWorkloads[1]), (8, contentionWorkloads[0])] {
        let inside = Int(Double(workload.inside) * rounds)
        let outside = Int(Double(workload.outside) * rounds)
        let iterations = IterationCount()
        Benchmark(
            "contention: Exclusive.access, \(threads) threads, \(workload.name), profiled",
            configuration: pairedContention
        ) { benchmark in
            // The same cell without a profile, run right before or right after (in turn), so that
            // both halves of the ratio see the same state of the machine.
            let twinFirst = iterations.next().isMultiple(of: 2)
            var twin: Duration = .zero
            if twinFirst { twin = timed { contendedRound(threads: threads, inside: inside, outside: outside) } }
            let profile = ContentionProfile.start(sampling: .all)
            let profiled = timed { contendedAccesses(benchmark, threads: threads, inside: inside, outside: outside) }
            blackHole(profile.stop())
            if !twinFirst { twin = timed { contendedRound(threads: threads, inside: inside, outside: outside) } }
            benchmark.measurement(overTwin, Int((profiled / twin * 100).rounded()))
        }
    }
}

/// The profiled contention cells: the matrix's metrics, and the profiled time over the same
/// iteration's unprofiled twin; five times the matrix's iterations, since the ratio of one pair
/// still moves by a quarter either way.
var pairedContention: Benchmark.Configuration {
    var configuration = contentionMatrix
    configuration.metrics.append(overTwin)
    configuration.maxIterations = 100
    configuration.maxDuration = .seconds(4)
    return configuration
}

/// A profiled iteration's time as a percentage of its unprofiled twin's, run back to back with it.
/// Two separately measured rows of identical code differed by up to 40 % in one run on two vCPUs
/// (Benchmarks/README.md); a ratio within one iteration is what a 10 % target can be read from.
let overTwin = BenchmarkMetric.custom(
    "Profiled over unprofiled twin (%)", polarity: .prefersSmaller, useScalingFactor: false)

/// How long `body` takes, on the continuous clock.
func timed(_ body: () -> Void) -> Duration {
    ContinuousClock().measure(body)
}

/// Counts a benchmark's iterations, to alternate what runs first.
final class IterationCount: Sendable {
    private let count = Atomic<Int>(0)

    func next() -> Int { count.add(1, ordering: .relaxed).oldValue }
}
