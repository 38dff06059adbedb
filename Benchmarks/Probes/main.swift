import Dispatch
import Exclusion

// The throwaway drivers behind "Issue 44" in Benchmarks/README.md, kept so that their numbers can
// be run again (`probe.sh`). Usage: probe KIND [SHIFT], where KIND is
// - access: 100,000,000 `access { $0 &+= 1 }` on one instance, made after SHIFT small allocations
//   so that it lands elsewhere in its cache line; prints the instance's place and ns per access;
// - submit: 10 instances, each given 1,000,000 `accessAsync { $0 &+= 1 }` and then one access;
//   prints each instance's milliseconds (ns per submission, since there are a million).

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
default:
    fatalError("usage: probe access [SHIFT] | probe submit")
}
