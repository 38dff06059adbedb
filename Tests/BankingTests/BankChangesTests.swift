import Dispatch
import Exclusion
import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

@testable import Banking

private let both: [Bank.Concurrency] = [.serial, .readersWriter]

/// A loop over `bank.changes` on a task of its own that takes `count` changes. It is made once its
/// iterator exists, so it is given everything committed after that; with `go`, it asks for nothing
/// until `go` is raised.
private struct Taking {
    let count: Int
    let taken = Recorder<AccountChange>()
    let loop: Task<Void, Never>

    init(_ count: Int, from bank: Bank, after go: Flag? = nil) async {
        self.count = count
        let started = Flag()
        let taken = taken
        loop = onADedicatedThread {
            var iterator = bank.changes.makeAsyncIterator()
            started.raise()
            // Its own thread: waiting for `go` here holds nobody else's.
            go?.wait()
            for _ in 0..<count {
                guard let change = await iterator.next(isolation: nil) else { return }
                taken.record(change)
            }
        }
        _ = await eventually { started.isRaised }
    }

    /// What it took, once it took them all, or the patience for an event has passed.
    func changes() async -> [AccountChange] {
        _ = await eventually { taken.values.count >= count }
        loop.cancel()
        _ = await loop.outcome()
        return taken.values
    }
}

/// Whether the bank keeps nothing for iterators of `changes` (none is registered).
private func nobodyIsWatching(_ bank: Bank) -> Bool {
    bank.store.read { !$0.changeLog.isWatched }
}

@Suite("Bank changes", .patientTimeLimit(minutes: 10))
struct BankChangesTests {
    @Test(arguments: both)
    func changesAreTheNotificationsInTheSameOrder(concurrency: Bank.Concurrency) async throws {
        let queue = DispatchQueue(label: "notifications")
        let bank = Bank(concurrency: concurrency, notificationQueue: queue)
        let recorder = ChangeRecorder(bank: bank)
        let taking = await Taking(7, from: bank)
        let checking = try bank.openAccount(initialBalance: .amount("100.00"))
        let savings = try bank.openAccount()
        try checking.addMoney(.amount("5.00"))
        try bank.transferMoneyAmount(.amount("30.00"), from: checking, to: savings)
        #expect(throws: BankError.self) { try savings.subtractMoney(.amount("31.00")) }  // refused: no change
        try savings.subtractMoney(.amount("10.00"))
        _ = try savings.closeAccount()

        let changes = await taking.changes()
        #expect(changes == (await recorder.waitFor(7)))
        #expect(
            changes.map { "\($0.account) \($0.oldBalance) \($0.newBalance) \($0.isClosed)" } == [
                "\(checking.id) 0.00 100.00 false",
                "\(savings.id) 0.00 0.00 false",
                "\(checking.id) 100.00 105.00 false",
                "\(checking.id) 105.00 75.00 false",  // a transfer is two changes, source first
                "\(savings.id) 0.00 30.00 false",
                "\(savings.id) 30.00 20.00 false",
                "\(savings.id) 20.00 0.00 true",
            ])
    }

    @Test func anIteratorIsGivenWhatWasCommittedAfterItWasMade() async throws {
        let bank = Bank(notificationQueue: DispatchQueue(label: "notifications"))
        let account = try bank.openAccount(initialBalance: .amount("1.00"))
        let taking = await Taking(1, from: bank)
        try account.addMoney(.amount("2.00"))
        let changes = await taking.changes()
        #expect(changes.map(\.newBalance) == [.amount("3.00")])
    }

    @Test(arguments: both)
    func underManyCommittersEveryChangeIsGivenOnceInOrder(concurrency: Bank.Concurrency) async throws {
        let bank = Bank(
            concurrency: concurrency, notificationQueue: DispatchQueue(label: "notifications"),
            announcer: Announcer(limit: 64))
        let audit = Exclusive(ChangeAudit(), label: "audit")
        let started = Flag()
        let loop = onADedicatedThread {
            var iterator = bank.changes.makeAsyncIterator()
            started.raise()
            while let change = await iterator.next(isolation: nil) { syncAccess(audit) { $0.add(change) } }
        }
        #expect(await eventually { started.isRaised })
        let accounts = try (0..<8).map { _ in try bank.openAccount(initialBalance: .amount("100.00")) }
        await onThreads(4, rounds: 5_000) { thread, round in
            let from = accounts[(thread + round) % accounts.count]
            let to = accounts[(thread * 3 + round * 5 + 1) % accounts.count]
            if from == to {
                try? from.addMoney(.amount("0.01"))
            } else {
                try? bank.transferMoneyAmount(.amount("0.37"), from: from, to: to)
            }
        }
        let committed = await bank.store.read { $0.changesRecorded }
        #expect(await eventually { syncAccess(audit) { $0.count } >= committed })
        loop.cancel()
        _ = await loop.outcome()
        let problem = await audit.access { $0.problem(accounts: accounts, committed: committed) }
        #expect(problem == nil)
    }

    @Test func theAuditRejectsAChangeLostGivenTwiceSwappedOrAfterAClosing() throws {
        let a = AccountID(number: 1)
        let b = AccountID(number: 2)
        func change(_ account: AccountID, _ old: String, _ new: String, closed: Bool = false) -> AccountChange {
            AccountChange(account: account, oldBalance: .amount(old), newBalance: .amount(new), isClosed: closed)
        }
        let history = [
            change(a, "0.00", "10.00"), change(b, "0.00", "0.00"), change(a, "10.00", "4.00"),
            change(b, "0.00", "6.00"), change(a, "4.00", "5.00"), change(a, "5.00", "0.00", closed: true),
        ]
        let bank = Bank(notificationQueue: DispatchQueue(label: "notifications"))
        let first = try bank.openAccount(initialBalance: .amount("5.00"))
        let second = try bank.openAccount()
        try bank.transferMoneyAmount(.amount("5.00"), from: first, to: second)
        try second.addMoney(.amount("1.00"))
        _ = try first.closeAccount()
        // The bank now stands where `history` leaves it.
        #expect(first.id == a && second.id == b)
        func problem(_ changes: [AccountChange], committed: Int = history.count) -> String? {
            var audit = ChangeAudit()
            for change in changes { audit.add(change) }
            return audit.problem(accounts: [first, second], committed: committed)
        }
        #expect(problem(history) == nil)
        var lost = history
        lost.remove(at: 2)
        #expect(problem(lost) != nil)
        #expect(problem(Array(history.dropLast())) != nil)  // the last one lost
        var twice = history
        twice.insert(history[3], at: 4)
        #expect(problem(twice) != nil)
        #expect(problem(history + [history[5]]) != nil)  // given twice at the end
        var swapped = history
        swapped.swapAt(2, 4)
        #expect(problem(swapped) != nil)
        #expect(problem(history + [change(a, "0.00", "1.00")]) != nil)  // after its closing
        #expect(problem(history, committed: history.count + 1) != nil)  // one never given
    }

    @Test func aLoopThatStopsAskingSlowsCommitsDownButNeverDeadlocksThem() async throws {
        let bank = Bank(
            concurrency: .serial, notificationQueue: DispatchQueue(label: "notifications"),
            announcer: Announcer(limit: 8, patience: .milliseconds(50)))
        let go = Flag()
        let taking = await Taking(41, from: bank, after: go)  // made, and not asked for anything yet
        let account = try bank.openAccount()
        await onThreads(1, rounds: 40) { _, _ in
            // About 32 of the 40 wait 0.05 s each.
            try? account.addMoney(.amount("1.00"))
        }
        #expect(account.balance == .amount("40.00"))
        // Nothing was lost meanwhile: the loop, once it asks, is given all of it.
        go.raise()
        let changes = await taking.changes()
        #expect(changes.count == 41)
        #expect(changes.last?.newBalance == .amount("40.00"))
    }

    @Test func aLoopMayCommitChangesItself() async throws {
        // A loop that transfers money for every change it is given, with a backlog limit it soon
        // reaches: its own commits wait for it, at most the patience, and everything goes on.
        let bank = Bank(
            concurrency: .serial, notificationQueue: DispatchQueue(label: "notifications"),
            announcer: Announcer(limit: 4, patience: .milliseconds(20)))
        let source = try bank.openAccount(initialBalance: .amount("100.00"))
        let sink = try bank.openAccount()
        let started = Flag()
        let loop = onADedicatedThread {
            var iterator = bank.changes.makeAsyncIterator()
            started.raise()
            var moved = 0
            while moved < 50, let change = await iterator.next(isolation: nil) {
                if change.account == source.id, change.newBalance < change.oldBalance { continue }
                try? bank.transferMoneyAmount(.amount("1.00"), from: source, to: sink)
                moved += 1
            }
        }
        #expect(await eventually { started.isRaised })
        try source.addMoney(.amount("1.00"))
        _ = await loop.outcome()
        #expect(sink.balance == .amount("50.00"))
        #expect(await eventually { nobodyIsWatching(bank) })
    }

    @Test func endingTheLoopFreesWhatItHeld() async throws {
        let bank = Bank(
            concurrency: .serial, notificationQueue: DispatchQueue(label: "notifications"),
            announcer: Announcer(limit: 8, patience: .seconds(600)))
        let account = try bank.openAccount()
        let loop = onADedicatedThread {
            for await change in bank.changes where change.newBalance == .amount("3.00") { break }
        }
        #expect(await eventually { !nobodyIsWatching(bank) })
        for _ in 0..<3 { try account.addMoney(.amount("1.00")) }
        _ = await loop.outcome()
        #expect(nobodyIsWatching(bank))
        // With nobody watching, commits far past the limit don't wait (they would for ten minutes
        // each, past the test's time limit, if the ended loop still held them back).
        await onThreads(1, rounds: 100) { _, _ in
            try? account.addMoney(.amount("1.00"))
        }
        #expect(account.balance == .amount("103.00"))
    }

    @Test func cancellingAWaitingLoopEndsIt() async throws {
        let bank = Bank(notificationQueue: DispatchQueue(label: "notifications"))
        let ended = Flag()
        let loop = onADedicatedThread {
            for await _ in bank.changes {}
            ended.raise()
        }
        #expect(await eventually { !nobodyIsWatching(bank) })
        loop.cancel()
        #expect(await eventually { ended.isRaised })
        #expect(await eventually { nobodyIsWatching(bank) })
    }

    @Test func theSequenceEndsWhenTheBankGoesAwayAfterTheLastChange() async throws {
        let taken = Recorder<AccountChange>()
        let ended = Flag()
        do {
            let bank = Bank(notificationQueue: DispatchQueue(label: "notifications"))
            let started = Flag()
            let changes = bank.changes  // the loop holds the sequence, not the bank
            onADedicatedThread {
                var iterator = changes.makeAsyncIterator()
                started.raise()
                while let change = await iterator.next(isolation: nil) { taken.record(change) }
                ended.raise()
            }
            #expect(await eventually { started.isRaised })
            let account = try bank.openAccount()
            try account.addMoney(.amount("2.00"))
        }
        #expect(await eventually { ended.isRaised })
        #expect(taken.values.map(\.newBalance) == [.zero, .amount("2.00")])
    }

    @Test func twoLoopsAreEachGivenEveryChange() async throws {
        let bank = Bank(
            concurrency: .readersWriter, notificationQueue: DispatchQueue(label: "notifications"),
            announcer: Announcer(limit: 16))
        let first = await Taking(1_001, from: bank)
        let second = await Taking(1_001, from: bank)
        let account = try bank.openAccount()
        await onThreads(1, rounds: 1_000) { _, _ in
            try? account.addMoney(.amount("0.01"))
        }
        let a = await first.changes()
        let b = await second.changes()
        #expect(a.count == 1_001)
        #expect(a == b)
        #expect(a.last?.newBalance == .amount("10.00"))
    }

    @MainActor @Test func aLoopOnTheMainActorIsGivenChangesThere() async throws {
        let bank = Bank(notificationQueue: DispatchQueue(label: "notifications"))
        let account = try bank.openAccount()
        let count = await onTheMainActor { () -> Int in
            var iterator = bank.changes.makeAsyncIterator()  // first, so it is given all five
            onNewThread { for _ in 0..<5 { try? account.addMoney(.amount("1.00")) } }
            var count = 0
            while let change = await iterator.next(isolation: #isolation) {
                MainActor.assertIsolated("a change given off the main actor")
                dispatchPrecondition(condition: .onQueue(.main))
                count += 1
                if change.newBalance == .amount("5.00") { break }
            }
            return count
        }
        #expect(count == 5)
    }

    @Test func aBankNobodyWatchesKeepsNoChanges() async throws {
        let bank = Bank(notificationQueue: DispatchQueue(label: "notifications"))
        let account = try bank.openAccount()
        for _ in 0..<100 { try account.addMoney(.amount("1.00")) }
        #expect(nobodyIsWatching(bank))
        do {
            let iterator = bank.changes.makeAsyncIterator()
            #expect(!nobodyIsWatching(bank))
            _ = iterator
        }
        #expect(nobodyIsWatching(bank))
    }
}
