import Benchmark
import Exclusion
import Synchronization

// The cost of a contention profile: the same accesses as "Exclusive.access", "Exclusive.access,
// 2 threads" and two cells of the contention matrix (the same code), with
// `ContentionProfile.start(sampling: .all)` running. The profile starts before the measurement and
// stops after it (stopping, and making the report, is not measured: a program pays it once).
//
// The contended rows also run the same accesses without a profile in each iteration, right before
// or right after (in turn), and report the profiled time over that twin's: on a machine with few
// cores two separately measured rows of identical code can differ by more than the targets allow
// (Benchmarks/README.md has the figures), while the two halves of one iteration see the same state
// of the machine.

func profilingBenchmarks() {
    Benchmark("Exclusive.access, profiled") { benchmark in
        let counter = Exclusive(0)
        let profile = ContentionProfile.start(sampling: .all)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { thousandTimes { counter.access { $0 &+= 1 } } }
        benchmark.stopMeasurement()
        blackHole(profile.stop())
    }
    let pairs = IterationCount()
    Benchmark("Exclusive.access, 2 threads, profiled", configuration: paired(threaded)) { benchmark in
        let each = benchmark.scaledIterations.count * 1_000 / 2
        benchmark.measurement(
            overTwin,
            pairedWithTwin(first: pairs.next().isMultiple(of: 2)) {
                accessesOnTwoThreads(each)
            } profiled: {
                benchmark.startMeasurement()
                defer { benchmark.stopMeasurement() }
                accessesOnTwoThreads(each)
            })
    }
    let rounds = WorkCalibration.roundsPerNanosecond
    for (threads, workload) in [(4, contentionWorkloads[1]), (8, contentionWorkloads[0])] {
        let inside = Int(Double(workload.inside) * rounds)
        let outside = Int(Double(workload.outside) * rounds)
        let pairs = IterationCount()
        Benchmark(
            "contention: Exclusive.access, \(threads) threads, \(workload.name), profiled",
            configuration: paired(contentionMatrix, iterations: 100)
        ) { benchmark in
            benchmark.measurement(
                overTwin,
                pairedWithTwin(first: pairs.next().isMultiple(of: 2)) {
                    contendedRound(threads: threads, inside: inside, outside: outside)
                } profiled: {
                    contendedAccesses(benchmark, threads: threads, inside: inside, outside: outside)
                })
        }
    }
}

/// Runs `twin` and then `profiled` with a contention profile running (or the other way round if
/// not `twinFirst`), and returns the profiled run's time as a percentage of the twin's.
func pairedWithTwin(first twinFirst: Bool, _ twin: () -> Void, profiled: () -> Void) -> Int {
    var twinTime = Duration.zero
    if twinFirst { twinTime = ContinuousClock().measure(twin) }
    let profile = ContentionProfile.start(sampling: .all)
    let profiledTime = ContinuousClock().measure(profiled)
    blackHole(profile.stop())
    if !twinFirst { twinTime = ContinuousClock().measure(twin) }
    return Int((profiledTime / twinTime * 100).rounded())
}

/// `configuration` with the profiled-over-twin metric, and `iterations` of them if given (for a
/// cell whose ratio moves too much from one pair to the next for the matrix's iterations).
func paired(_ configuration: Benchmark.Configuration, iterations: Int? = nil) -> Benchmark.Configuration {
    var configuration = configuration
    configuration.metrics.append(overTwin)
    if let iterations {
        configuration.maxIterations = iterations
        configuration.maxDuration = .seconds(4)
    }
    return configuration
}

/// A profiled iteration's time as a percentage of its unprofiled twin's, run back to back with it.
let overTwin = BenchmarkMetric.custom(
    "Profiled over unprofiled twin (%)", polarity: .prefersSmaller, useScalingFactor: false)

/// Counts a benchmark's iterations, to alternate what runs first.
final class IterationCount: Sendable {
    private let count = Atomic<Int>(0)

    func next() -> Int { count.add(1, ordering: .relaxed).oldValue }
}
