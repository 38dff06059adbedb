import Exclusion

// Makes `count` uncontended operations of one kind, for `icount.sh` to count their instructions
// under valgrind. Usage: icount KIND COUNT, where KIND is access, read, write, await, or
// profiled (access with a contention profile running).

let arguments = CommandLine.arguments
guard arguments.count == 3, let count = Int(arguments[2]) else { fatalError("usage: icount KIND COUNT") }
let exclusive = Exclusive(0, label: "counter")
let readersWriter = ReadersWriter(0, label: "readers-writer counter")

/// Keeps a result alive, so that the optimizer can't drop the loop that made it.
@inline(never) func keep(_ value: Int) {
    if value == -1 { print(value) }
}

switch arguments[1] {
case "access":
    for _ in 0..<count { exclusive.access { $0 += 1 } }
    keep(exclusive.access { $0 })
case "profiled":
    let profile = ContentionProfile.start(sampling: .all)
    for _ in 0..<count { exclusive.access { $0 += 1 } }
    keep(exclusive.access { $0 })
    _ = profile.stop()
case "read":
    var sum = 0
    for _ in 0..<count { sum &+= readersWriter.read { $0 } }
    keep(sum)
case "write":
    for _ in 0..<count { readersWriter.write { $0 += 1 } }
    keep(readersWriter.read { $0 })
case "await":
    // On the main actor, from top-level code: valgrind can't run a detached task's threads here.
    for _ in 0..<count { await exclusive.access { $0 += 1 } }
    keep(exclusive.access { $0 })
default:
    fatalError("unknown kind \(arguments[1]): access, read, write, await or profiled")
}
