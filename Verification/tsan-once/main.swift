// Threads that each take the minimum of a small array, over and over, in an unoptimized build:
// the standard library's generic `min()` asks the runtime for `Optional<Int>`'s metadata on each
// call. Under ThreadSanitizer the Swift runtime on Linux takes a lock for every such request (see
// tsan-once.sh), so the threads queue up behind one another. Prints the seconds the work took.
//
// Usage: main THREADS CALLS (CALLS in all, shared out evenly)

import Foundation

let threads = Int(CommandLine.arguments[1])!
let calls = Int(CommandLine.arguments[2])!
let done = DispatchSemaphore(value: 0)
let start = ContinuousClock.now
for thread in 0..<threads {
    Thread.detachNewThread {
        var values = [3, 1, 2, thread]
        var sum = 0
        for call in 0..<calls / threads {
            values[0] = call
            sum &+= values.min()!
        }
        precondition(sum >= 0)
        done.signal()
    }
}
for _ in 0..<threads { done.wait() }
let elapsed = ContinuousClock.now - start
print(String(format: "%.2f", Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
