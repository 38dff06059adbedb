import Benchmark
import Exclusion

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
        Benchmark(
            "contention: Exclusive.access, \(threads) threads, \(workload.name), profiled",
            configuration: contentionMatrix
        ) { benchmark in
            let counter = Exclusive(0)
            let profile = ContentionProfile.start(sampling: .all)
            benchmark.startMeasurement()
            onThreads(threads) { _ in
                for _ in 0..<10_000 / threads {
                    counter.access { value in value = busyWork(inside, value) }
                    blackHole(busyWork(outside, 1))
                }
            }
            benchmark.stopMeasurement()
            blackHole(profile.stop())
        }
    }
}
