// What one instance costs a user who makes one per object: resident memory, the time to make it,
// and the heap allocations it makes, when made and when first used. instance_cost.py runs it, each
// kind in a process of its own, and prints the table in Benchmarks/README.md.
//
// Usage: InstanceCost KIND [COUNT]   (KIND: one of `kinds` below; COUNT: 200,000 by default)
// Prints one line of JSON. Allocations are counted only when malloc-count.c is preloaded
// (instance_cost.py builds and preloads it); otherwise they print as null.

import Dispatch
import Exclusion
import Foundation
import Synchronization

/// One way to hold an `Int` that several threads share, as users write it.
protocol Kind {
    associatedtype Instance
    static func make() -> Instance
    static func use(_ instance: Instance) async
}

final class MutexBox: Sendable {
    let value = Mutex(0)
}

final class LockedBox: @unchecked Sendable {
    // @unchecked: `value` is only touched while `lock` is held.
    let lock = NSLock()
    var value = 0
}

actor Counter {
    var value = 0
    func increment() { value += 1 }
}

final class QueueBox: @unchecked Sendable {
    // @unchecked: `value` is only touched on `queue`.
    let queue = DispatchQueue(label: "box")
    var value = 0
}

enum ExclusiveKind: Kind {
    static func make() -> Exclusive<Int> { Exclusive(0) }
    static func use(_ instance: Exclusive<Int>) async { increment(instance) }
    /// Synchronous: the access a thread makes, not the awaited one.
    static func increment(_ instance: Exclusive<Int>) { instance.access { $0 += 1 } }
}

/// Used once with work submitted to run later, which makes the side structures (the backlog) and,
/// while the work is pending, a drain queue: what an instance keeps of them once it is quiet.
enum ExclusiveSubmittedKind: Kind {
    static func make() -> Exclusive<Int> { Exclusive(0) }
    static func use(_ instance: Exclusive<Int>) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            instance.accessAsync {
                $0 += 1
                done.resume()
            }
        }
    }
}

enum ReadersWriterKind: Kind {
    static func make() -> ReadersWriter<Int> { ReadersWriter(0) }
    static func use(_ instance: ReadersWriter<Int>) async { increment(instance) }
    static func increment(_ instance: ReadersWriter<Int>) { instance.write { $0 += 1 } }
}

enum MutexKind: Kind {
    static func make() -> MutexBox { MutexBox() }
    static func use(_ instance: MutexBox) async { instance.value.withLock { $0 += 1 } }
}

enum NSLockKind: Kind {
    static func make() -> LockedBox { LockedBox() }
    static func use(_ instance: LockedBox) async { increment(instance) }
    static func increment(_ instance: LockedBox) {
        instance.lock.lock()
        instance.value += 1
        instance.lock.unlock()
    }
}

enum ActorKind: Kind {
    static func make() -> Counter { Counter() }
    static func use(_ instance: Counter) async { await instance.increment() }
}

enum DispatchQueueKind: Kind {
    static func make() -> QueueBox { QueueBox() }
    static func use(_ instance: QueueBox) async { instance.queue.sync { instance.value += 1 } }
}

/// The original pattern's asynchronous use, the peer of `ExclusiveSubmittedKind`.
enum DispatchQueueSubmittedKind: Kind {
    static func make() -> QueueBox { QueueBox() }
    static func use(_ instance: QueueBox) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            instance.queue.async {
                instance.value += 1
                done.resume()
            }
        }
    }
}

let kinds: [String: any Kind.Type] = [
    "Exclusive": ExclusiveKind.self, "ReadersWriter": ReadersWriterKind.self, "Mutex": MutexKind.self,
    "NSLock": NSLockKind.self, "actor": ActorKind.self, "DispatchQueue": DispatchQueueKind.self,
    "Exclusive, submitted": ExclusiveSubmittedKind.self, "DispatchQueue, submitted": DispatchQueueSubmittedKind.self,
]

/// Bytes of this process resident in memory.
func residentBytes() -> Int {
    #if os(Linux)
    // /proc/self/statm: sizes in pages; the second is the resident set.
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    #else
    var info = mach_task_basic_info()
    var count = mach_msg_type_number_t(MemoryLayout<mach_task_basic_info>.size / MemoryLayout<natural_t>.size)
    let status = withUnsafeMutablePointer(to: &info) {
        $0.withMemoryRebound(to: integer_t.self, capacity: Int(count)) {
            task_info(mach_task_self_, task_flavor_t(MACH_TASK_BASIC_INFO), $0, &count)
        }
    }
    return status == KERN_SUCCESS ? Int(info.resident_size) : 0
    #endif
}

/// Heap allocations so far, if malloc-count.c is preloaded.
let mallocs: (@convention(c) () -> UInt64)? = {
    // The process's own handle finds a symbol of any library loaded into it, preloaded ones included.
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "instance_cost_mallocs") else { return nil }
    return unsafeBitCast(symbol, to: (@convention(c) () -> UInt64).self)
}()

func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

func measure<K: Kind>(_ kind: K.Type, count: Int) async -> [String: Double?] {
    // Made first, so that what happens once (type metadata, lazy globals) isn't counted, and so
    // that its slots are resident before the first reading.
    var warmUp = ContiguousArray<K.Instance?>(repeating: nil, count: 1_000)
    for index in warmUp.indices { warmUp[index] = K.make() }
    for instance in warmUp { await K.use(instance!) }
    var instances = ContiguousArray<K.Instance?>(repeating: nil, count: count)

    let residentBefore = residentBytes()
    let mallocsBefore = mallocs?()
    let start = now()
    for index in instances.indices { instances[index] = K.make() }
    let made = now()
    let mallocsMade = mallocs?()
    for instance in instances { await K.use(instance!) }
    let mallocsUsed = mallocs?()
    let residentAfter = residentBytes()

    withExtendedLifetime((warmUp, instances)) {}
    let perInstance = { (from: UInt64?, to: UInt64?) -> Double? in
        guard let from, let to else { return nil }
        return Double(to - from) / Double(count)
    }
    return [
        "bytes": Double(residentAfter - residentBefore) / Double(count),
        "make_ns": Double(made - start) / Double(count),
        "init_mallocs": perInstance(mallocsBefore, mallocsMade),
        "use_mallocs": perInstance(mallocsMade, mallocsUsed),
    ]
}

let arguments = CommandLine.arguments
guard arguments.count >= 2, let kind = kinds[arguments[1]] else {
    FileHandle.standardError.write(
        Data("usage: InstanceCost \(kinds.keys.sorted().joined(separator: "|")) [COUNT]\n".utf8))
    exit(2)
}
let count = arguments.count > 2 ? Int(arguments[2]) ?? 200_000 : 200_000
let result = await measure(kind, count: count)
var fields = ["\"kind\": \"\(arguments[1])\"", "\"count\": \(count)"]
for (key, value) in result.sorted(by: { $0.key < $1.key }) {
    fields.append("\"\(key)\": \(value.map { String($0) } ?? "null")")
}
print("{\(fields.joined(separator: ", "))}")
