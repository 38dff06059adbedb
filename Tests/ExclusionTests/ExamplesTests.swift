import Dispatch
import Exclusion
import ExclusionTestSupport
import Testing

// The code examples of README.md and of the primitives' doc comments, compiled and run, so that
// they can't drift from the API or claim what they don't do. In an async context the awaiting
// overloads win, so the synchronous parts live in synchronous functions, as in the README.

private let inventory = Exclusive([String: Int](), label: "inventory")

private func restock(_ printed: @escaping @Sendable (String) -> Void) {  // from any thread
    inventory.access { $0["apples", default: 0] += 3 }  // exclusive, on this thread
    inventory.accessAsync { $0["pears", default: 0] += 1 }  // exclusive, later; returns at once
    inventory.accessAsync({ $0.values.reduce(0, +) }) { total in
        dispatchPrecondition(condition: .onQueue(.main))  // delivered on the main queue
        printed("items: \(try! total.get())")
    }
}

private func apples() async -> Int {
    await inventory.access { $0["apples"] ?? 0 }  // suspends instead of blocking
}

private func documentNames() -> [String] {
    let names = ReadersWriter([String](), label: "document names")
    names.writeAsync { $0.append("Report.xml") }  // alone, like a dispatch barrier
    return names.read { $0 }  // shared with other reads; sees the append: same thread, later
}

private func homeVisits(_ printed: @escaping @Sendable (Int) -> Void) -> Int {
    let visits = Exclusive([String: Int](), label: "visits")
    visits.access { $0["/home", default: 0] += 1 }
    let homeVisits = visits.access { $0["/home"] ?? 0 }
    visits.accessAsync({ $0.values.reduce(0, +) }) { total in printed((try? total.get()) ?? 0) }
    return homeVisits
}

@Suite("Examples", .timeLimit(.minutes(10)))
struct ExamplesTests {
    @Test func theReadmeExample() async {
        let printed: String = await withCheckedContinuation { continuation in
            restock { continuation.resume(returning: $0) }
        }
        #expect(printed == "items: 4")
        #expect(await apples() == 3)
        #expect(documentNames() == ["Report.xml"])
    }

    @Test func theExclusiveExample() async {
        var visits = 0
        let total: Int = await withCheckedContinuation { continuation in
            visits = homeVisits { continuation.resume(returning: $0) }
        }
        #expect(visits == 1)
        #expect(total == 1)
    }
}
