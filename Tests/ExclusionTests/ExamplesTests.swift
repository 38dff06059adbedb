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

private func nextJob() throws -> String {
    let jobs = Exclusive([String](), label: "jobs")
    jobs.accessAsync { $0.append("send invoices") }  // from any thread, at any time
    let next = try jobs.access(when: { !$0.isEmpty }, timeout: .seconds(5)) { $0.removeFirst() }
    return next
}

// The waiting accessors' doc-comment examples, with just enough around them to run.

private struct ExampleLedger: Sendable {
    var balances: [Int: Int] = [1: 100]
    func balance(of id: Int) -> Int { balances[id, default: 0] }
    mutating func withdraw(_ amount: Int, from id: Int) { balances[id, default: 0] -= amount }
}

private func withdrawWhenCovered(_ ledger: Exclusive<ExampleLedger>, _ amount: Int, from id: Int) throws {
    // Waits until the account holds enough, then withdraws, in one access.
    try ledger.access(when: { $0.balance(of: id) >= amount }, timeout: .seconds(5)) { ledger in
        ledger.withdraw(amount, from: id)
    }
}

private func nextAwaitedJob(_ jobs: Exclusive<[String]>) async throws -> String {
    let job = try await jobs.access(when: { !$0.isEmpty }) { $0.removeFirst() }
    return job
}

private struct Orders: Sendable {
    var isOpen = true
    var placed: [String] = []
    mutating func place(_ order: String) -> Int {
        placed.append(order)
        return placed.count
    }
}

private func placeWhenOpen(
    _ orders: Exclusive<Orders>, _ order: String, show: @escaping @Sendable (Result<Int, any Error>) -> Void
) {
    orders.accessAsync(when: { $0.isOpen }, { $0.place(order) }) { result in
        show(result)  // on the main queue
    }
}

private func reportDepth(_ queue: Exclusive<[Int]>, report: (Int) -> Void) {
    if let depth = queue.accessIfAvailable({ $0.count }) { report(depth) }
}

private struct Index: Sendable {
    var isLoaded = true
    var summary = "3 documents"
}

private func summary(_ index: ReadersWriter<Index>) throws -> String {
    let report = try index.read(when: { $0.isLoaded }, timeout: .seconds(2)) { $0.summary }
    return report
}

private struct Slots: Sendable { var free = 1 }

private func takeASlot(_ slots: ReadersWriter<Slots>) throws {
    try slots.write(when: { $0.free > 0 }, timeout: .milliseconds(200)) { $0.free -= 1 }
}

private func timeoutExample(_ jobs: Exclusive<[String]>, run: (String) -> Void) throws -> String? {
    var printed: String?
    do {
        let job = try jobs.access(when: { !$0.isEmpty }, timeout: .milliseconds(200)) { $0.removeFirst() }
        run(job)
    } catch let error as TimeoutError {
        // Exclusion: waited 0.2 seconds on "jobs", and its condition was false each time it looked.
        printed = "\(error)"
    }
    return printed
}

@Suite("Examples", .patientTimeLimit(minutes: 10))
struct ExamplesTests {
    @Test func theReadmeExample() async {
        let printed: String = await withCheckedContinuation { continuation in
            restock { continuation.resume(returning: $0) }
        }
        #expect(printed == "items: 4")
        #expect(await apples() == 3)
        #expect(documentNames() == ["Report.xml"])
    }

    @Test func theReadmeWaitingExample() throws {
        #expect(try nextJob() == "send invoices")
    }

    @Test func theWaitingDocCommentExamples() async throws {
        let ledger = Exclusive(ExampleLedger(), label: "ledger")
        try withdrawWhenCovered(ledger, 30, from: 1)
        #expect(syncAccess(ledger, { $0.balance(of: 1) }) == 70)

        let jobs = Exclusive(["report"], label: "jobs")
        #expect(try await nextAwaitedJob(jobs) == "report")

        let placed: Int = try await withCheckedThrowingContinuation { continuation in
            placeWhenOpen(Exclusive(Orders()), "tea") { result in
                dispatchPrecondition(condition: .onQueue(.main))
                continuation.resume(with: result)
            }
        }
        #expect(placed == 1)

        var depth: Int?
        reportDepth(Exclusive([1, 2, 3])) { depth = $0 }
        #expect(depth == 3)

        #expect(try summary(ReadersWriter(Index())) == "3 documents")
        let slots = ReadersWriter(Slots())
        try takeASlot(slots)
        #expect(throws: TimeoutError.self) { try takeASlot(slots) }

        let printed = try timeoutExample(Exclusive([String](), label: "jobs")) { _ in }
        #expect(
            printed == "Exclusion: waited 0.2 seconds on \"jobs\", and its condition was false each time it looked.")
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
