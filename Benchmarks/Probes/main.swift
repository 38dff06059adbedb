import Dispatch
import Exclusion
import Foundation
import Synchronization

// The throwaway drivers behind "Issue 44" in Benchmarks/README.md, kept so that their numbers can
// be run again (`probe.sh`). Usage: probe KIND [SHIFT], where KIND is
// - access: 100,000,000 `access { $0 &+= 1 }` on one instance, made after SHIFT small allocations
//   so that it lands elsewhere in its cache line; prints the instance's place and ns per access;
// - submit: 10 instances, each given 1,000,000 `accessAsync { $0 &+= 1 }` and then one access;
//   prints each instance's milliseconds (ns per submission, since there are a million);
// - wakeup: 300,000 wake-ups of a waiting thread, as the benchmark "wake-up,
//   Exclusive.access(when:)" times them; prints ns per wake-up for each 100,000;
// - values: 10,000,000 `access { $0 &+= 1 }` while a task's `for await` loop over `values` takes
//   the newest value, as the benchmark "Exclusive.access, one values consumer" has it; prints ns
//   per access and how many values the loop was given;
// - quiet: 20,000 submissions to an instance that has gone quiet since the last (a pause of
//   200 µs between them, in which its drain ends and its side structures may go), each timed from
//   `accessAsync` until its job runs; prints the median and the 90th percentile in ns.

/// Keeps a result alive, so that the optimizer can't drop the loop that made it.
@inline(never) func keep(_ value: Int) {
    if value == -1 { print(value) }
}

let arguments = CommandLine.arguments
switch arguments.count > 1 ? arguments[1] : "" {
case "access":
    let shift = arguments.count > 2 ? Int(arguments[2]) ?? 0 : 0
    let padding = (0..<shift).map { _ in UnsafeMutableRawPointer.allocate(byteCount: 16, alignment: 16) }
    let counter = Exclusive(0)
    let count = 100_000_000
    let start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<count { counter.access { $0 &+= 1 } }
    keep(counter.access { $0 })
    let nanoseconds = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count)
    let place = UInt(bitPattern: Unmanaged.passUnretained(counter).toOpaque()) % 64
    print("instance at byte \(place) of its line: \(nanoseconds) ns per access")
    padding.forEach { $0.deallocate() }
case "submit":
    var milliseconds: [Int] = []
    for _ in 0..<10 {
        let start = DispatchTime.now().uptimeNanoseconds
        let counter = Exclusive(0)
        for _ in 0..<1_000_000 { counter.accessAsync { $0 &+= 1 } }
        keep(counter.access { $0 })
        milliseconds.append(Int(DispatchTime.now().uptimeNanoseconds - start) / 1_000_000)
    }
    print("ms per million submissions: \(milliseconds)")
case "wakeup":
    // The benchmark's "wake-up, Exclusive.access(when:)": a waiter thread waits, round after round,
    // for the state to reach the round; this thread changes it as soon as the waiter said it
    // waits, and spins until the waiter's body has started. Prints ns per wake-up, per 100,000.
    let round = Exclusive(0, label: "round")
    let waiting = Atomic<Int>(0)
    let started = Atomic<Int>(0)
    let rounds = 300_000
    Thread {
        for target in 1...rounds {
            try! round.access(
                when: { value in
                    if value != target { waiting.store(target, ordering: .sequentiallyConsistent) }
                    return value == target
                }
            ) { _ in started.store(target, ordering: .sequentiallyConsistent) }
        }
    }.start()
    var nanoseconds: [Int] = []
    var total: UInt64 = 0
    for target in 1...rounds {
        while waiting.load(ordering: .sequentiallyConsistent) != target {}
        let start = DispatchTime.now().uptimeNanoseconds
        round.access { $0 = target }
        while started.load(ordering: .sequentiallyConsistent) != target {}
        total += DispatchTime.now().uptimeNanoseconds - start
        if target % 100_000 == 0 {
            nanoseconds.append(Int(total / 100_000))
            total = 0
        }
    }
    print("ns per wake-up: \(nanoseconds)")
case "values":
    let counter = Exclusive(0)
    let count = 10_000_000
    let given = Atomic<Int>(0)
    let started = DispatchSemaphore(value: 0)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        var iterator = counter.values { $0 }.makeAsyncIterator()
        var value = await iterator.next(isolation: nil)
        started.signal()
        while let seen = value, seen != count {
            value = await iterator.next(isolation: nil)
            given.add(1, ordering: .relaxed)
        }
        done.signal()
    }
    started.wait()
    let start = DispatchTime.now().uptimeNanoseconds
    for _ in 0..<count { counter.access { $0 &+= 1 } }
    done.wait()
    let nanoseconds = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count)
    print("\(nanoseconds) ns per access, \(given.load(ordering: .relaxed)) values given")
case "quiet":
    let counter = Exclusive(0)
    let ran = Atomic<Int>(0)
    var nanoseconds: [UInt64] = []
    for round in 1...20_000 {
        let start = DispatchTime.now().uptimeNanoseconds
        counter.accessAsync { _ in ran.store(round, ordering: .releasing) }
        while ran.load(ordering: .acquiring) != round {}
        nanoseconds.append(DispatchTime.now().uptimeNanoseconds - start)
        let pause = DispatchTime.now().uptimeNanoseconds + 200_000
        while DispatchTime.now().uptimeNanoseconds < pause {}
    }
    nanoseconds.sort()
    print("ns from submission to run: median \(nanoseconds[10_000]), 90th percentile \(nanoseconds[18_000])")
default:
    fatalError("usage: probe access [SHIFT] | probe submit | probe wakeup | probe values | probe quiet")
}
