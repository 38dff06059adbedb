import Benchmark
import Dispatch
import Documents
import Foundation
import Synchronization

// How long `allDocs` takes on a store on disk while an import of 10,000 files runs into it,
// against the same store with no import: a reader thread calls it back to back and times each
// call. Each iteration reports the median, the 99th percentile and the longest call, in
// nanoseconds. A read must never wait for the disk: a commit, and the sync it waits for, happen
// outside the registry, so the import shows only as the moments its batches are applied.
// `python3 ratios.py --target DocumentsBenchmarks` prints the rows.

let readLatencyMetrics: [BenchmarkMetric] = [
    .custom("allDocs p50 (ns)", polarity: .prefersSmaller, useScalingFactor: false),
    .custom("allDocs p99 (ns)", polarity: .prefersSmaller, useScalingFactor: false),
    .custom("allDocs max (ns)", polarity: .prefersSmaller, useScalingFactor: false),
]

func readLatencyBenchmarks() {
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock] + readLatencyMetrics, timeUnits: .milliseconds, maxDuration: .seconds(20),
        maxIterations: 5)
    Benchmark("allDocs latency during an import of 10000 files", configuration: configuration) { benchmark in
        let folder = TemporaryStoreFolder()
        defer { folder.remove() }
        let manager = try! DocumentManager(directory: folder.url)
        let waiter = ImportWaiter()
        let importing = Atomic<Bool>(true)
        benchmark.startMeasurement()
        let latencies = timingReads(of: manager, while: { importing.load(ordering: .relaxed) }) {
            manager.importDocuments(
                at: generatedFiles, deliverOn: DispatchQueue(label: "import delivery"), delegate: waiter)
            waiter.done.wait()
            importing.store(false, ordering: .relaxed)
        }
        benchmark.stopMeasurement()
        precondition(waiter.imported.load(ordering: .relaxed) == generatedFiles.count, "the import lost files")
        report(latencies, to: benchmark)
    }
    Benchmark("allDocs latency, no import", configuration: configuration) { benchmark in
        // The same store, already holding the 10,000 documents, read for as long as an import takes.
        let folder = TemporaryStoreFolder()
        defer { folder.remove() }
        let manager = try! DocumentManager(directory: folder.url)
        let waiter = ImportWaiter()
        manager.importDocuments(
            at: generatedFiles, deliverOn: DispatchQueue(label: "import delivery"), delegate: waiter)
        waiter.done.wait()
        let until = DispatchTime.now().uptimeNanoseconds + 2_000_000_000
        benchmark.startMeasurement()
        let latencies = timingReads(of: manager, while: { DispatchTime.now().uptimeNanoseconds < until }) {}
        benchmark.stopMeasurement()
        report(latencies, to: benchmark)
    }
}

/// Calls `allDocs` back to back on a thread of its own while `going` holds, timing each call,
/// and runs `work` meanwhile on the calling thread; returns the times, in nanoseconds.
private func timingReads(
    of manager: DocumentManager, while going: @escaping @Sendable () -> Bool, _ work: () -> Void
)
    -> [UInt64]
{
    let latencies = Mutex<[UInt64]>([])
    let done = DispatchSemaphore(value: 0)
    Thread {
        var mine: [UInt64] = []
        mine.reserveCapacity(1 << 20)
        repeat {
            let start = DispatchTime.now().uptimeNanoseconds
            blackHole(manager.allDocs)
            mine.append(DispatchTime.now().uptimeNanoseconds - start)
        } while going()
        latencies.withLock { $0 = mine }
        done.signal()
    }.start()
    work()
    done.wait()
    return latencies.withLock { $0 }
}

private func report(_ latencies: [UInt64], to benchmark: Benchmark) {
    let sorted = latencies.sorted()
    func percentile(_ fraction: Double) -> Int {
        Int(sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))])
    }
    benchmark.measurement(readLatencyMetrics[0], percentile(0.50))
    benchmark.measurement(readLatencyMetrics[1], percentile(0.99))
    benchmark.measurement(readLatencyMetrics[2], Int(sorted.last ?? 0))
}
