import Dispatch
import ExclusionTestSupport
import Foundation
import SplitMix
import Synchronization
import Testing

@testable import Banking

private let both: [Bank.Concurrency] = [.serial, .readersWriter]
private let announcing = Bank.ChangeNotifications.allCases

/// Every balance and flag, and the total: what a refused operation must leave untouched.
private func snapshot(_ bank: Bank) -> [String] {
    bank.accounts.map { "\($0.id) \($0.balance) \($0.isClosed)" } + ["total \(bank.totalBalanceInAllAccounts)"]
}

@Suite("Bank", .patientTimeLimit(minutes: 10))
struct BankTests {
    private let queue = DispatchQueue(label: "bank notifications")

    // MARK: - Accounts and money

    @Test(arguments: both)
    func opensAccountsInOrder(concurrency: Bank.Concurrency) throws {
        let bank = Bank(concurrency: concurrency, notificationQueue: queue)
        let first = try bank.openAccount(initialBalance: .amount("10.00"))
        let second = try bank.openAccount()
        #expect(bank.accounts == [first, second])
        #expect(bank.accounts.map(\.id.number) == [1, 2])
        #expect(first.balance == .amount("10.00"))
        #expect(second.balance == .zero)
        #expect(!first.isClosed)
        #expect(bank.totalBalanceInAllAccounts == .amount("10.00"))
    }

    @Test(arguments: both)
    func depositsWithdrawalsAndClosing(concurrency: Bank.Concurrency) throws {
        let bank = Bank(concurrency: concurrency, notificationQueue: queue)
        let account = try bank.openAccount(initialBalance: .amount("5.00"))
        try account.addMoney(.amount("2.50"))
        try account.subtractMoney(.amount("7.50"))
        #expect(account.balance == .zero)
        try account.addMoney(.amount("1.25"))
        #expect(try account.closeAccount() == .amount("1.25"))
        #expect(account.isClosed)
        #expect(account.balance == .zero)
        #expect(bank.totalBalanceInAllAccounts == .zero)
    }

    @Test(arguments: both)
    func transfersMoveMoneyAndKeepTheTotal(concurrency: Bank.Concurrency) throws {
        let bank = Bank(concurrency: concurrency, notificationQueue: queue)
        let alice = try bank.openAccount(initialBalance: .amount("100.00"))
        let bob = try bank.openAccount(initialBalance: .amount("1.00"))
        try bank.transferMoneyAmount(.amount("30.00"), from: alice, to: bob)
        #expect(alice.balance == .amount("70.00"))
        #expect(bob.balance == .amount("31.00"))
        #expect(bank.totalBalanceInAllAccounts == .amount("101.00"))
    }

    // MARK: - Checks before changes

    @Test(arguments: both)
    func refusedOperationsChangeNothing(concurrency: Bank.Concurrency) throws {
        let bank = Bank(concurrency: concurrency, notificationQueue: queue)
        let rich = try bank.openAccount(initialBalance: .amount("50.00"))
        let poor = try bank.openAccount(initialBalance: .amount("1.00"))
        let closed = try bank.openAccount(initialBalance: .amount("3.00"))
        _ = try closed.closeAccount()
        let stranger = try Bank(concurrency: concurrency, notificationQueue: queue).openAccount()
        let full = try bank.openAccount(initialBalance: Money(minorUnits: .max - 10_000))
        let before = snapshot(bank)

        func expectRefusal(_ expected: BankError, _ operation: () throws -> Void) {
            #expect(throws: expected) { try operation() }
            #expect(snapshot(bank) == before, "a refused operation changed the bank: \(expected)")
        }

        expectRefusal(.invalidAmount(.zero)) { try rich.addMoney(.zero) }
        expectRefusal(.invalidAmount(.amount("-1.00"))) { try rich.addMoney(.amount("-1.00")) }
        expectRefusal(.invalidAmount(.zero)) { try rich.subtractMoney(.zero) }
        expectRefusal(.invalidAmount(.amount("-0.01"))) {
            try bank.transferMoneyAmount(.amount("-0.01"), from: rich, to: poor)
        }
        expectRefusal(.insufficientFunds(poor.id, balance: .amount("1.00"), requested: .amount("1.01"))) {
            try poor.subtractMoney(.amount("1.01"))
        }
        expectRefusal(.insufficientFunds(poor.id, balance: .amount("1.00"), requested: .amount("2.00"))) {
            try bank.transferMoneyAmount(.amount("2.00"), from: poor, to: rich)
        }
        expectRefusal(.accountClosed(closed.id)) { try closed.addMoney(.amount("1.00")) }
        expectRefusal(.accountClosed(closed.id)) { try closed.subtractMoney(.amount("1.00")) }
        expectRefusal(.accountClosed(closed.id)) { _ = try closed.closeAccount() }
        expectRefusal(.accountClosed(closed.id)) {
            try bank.transferMoneyAmount(.amount("1.00"), from: rich, to: closed)
        }
        expectRefusal(.accountClosed(closed.id)) {
            try bank.transferMoneyAmount(.amount("1.00"), from: closed, to: rich)
        }
        expectRefusal(.sameAccount(rich.id)) { try bank.transferMoneyAmount(.amount("1.00"), from: rich, to: rich) }
        expectRefusal(.unknownAccount(stranger.id)) {
            try bank.transferMoneyAmount(.amount("1.00"), from: rich, to: stranger)
        }
        expectRefusal(.unknownAccount(stranger.id)) {
            try bank.transferMoneyAmount(.amount("1.00"), from: stranger, to: rich)
        }
        expectRefusal(.overflow) { try full.addMoney(Money(minorUnits: .max)) }
        // Only the total would overflow here, not the balance.
        expectRefusal(.overflow) { try poor.addMoney(Money(minorUnits: .max - 5_000)) }
        expectRefusal(.overflow) { _ = try bank.openAccount(initialBalance: Money(minorUnits: .max)) }
        expectRefusal(.invalidAmount(.amount("-1.00"))) { _ = try bank.openAccount(initialBalance: .amount("-1.00")) }
    }

    // MARK: - Notifications

    @Test(arguments: both, announcing)
    func everyChangeIsAnnouncedOnceInCommitOrder(
        concurrency: Bank.Concurrency, notifications: Bank.ChangeNotifications
    ) async throws {
        let bank = Bank(concurrency: concurrency, notificationQueue: queue, changeNotifications: notifications)
        let recorder = ChangeRecorder(bank: bank) { [queue] _ in dispatchPrecondition(condition: .onQueue(queue)) }
        let alice = try bank.openAccount(initialBalance: .amount("10.00"))
        let bob = try bank.openAccount()
        try alice.addMoney(.amount("5.00"))
        try bank.transferMoneyAmount(.amount("15.00"), from: alice, to: bob)
        #expect(throws: BankError.self) { try alice.subtractMoney(.amount("1.00")) }  // refused: no notification
        try bob.subtractMoney(.amount("1.00"))
        _ = try bob.closeAccount()

        let changes = await recorder.waitFor(7)
        await drain(queue)  // a notification posted twice would be there by now
        #expect(recorder.recorded.count == 7)
        #expect(
            changes == [
                AccountChange(account: alice.id, oldBalance: .zero, newBalance: .amount("10.00"), isClosed: false),
                AccountChange(account: bob.id, oldBalance: .zero, newBalance: .zero, isClosed: false),
                AccountChange(
                    account: alice.id, oldBalance: .amount("10.00"), newBalance: .amount("15.00"), isClosed: false),
                AccountChange(account: alice.id, oldBalance: .amount("15.00"), newBalance: .zero, isClosed: false),
                AccountChange(account: bob.id, oldBalance: .zero, newBalance: .amount("15.00"), isClosed: false),
                AccountChange(
                    account: bob.id, oldBalance: .amount("15.00"), newBalance: .amount("14.00"), isClosed: false),
                AccountChange(account: bob.id, oldBalance: .amount("14.00"), newBalance: .zero, isClosed: true),
            ])
    }

    @Test(arguments: both, announcing)
    func notificationsFromManyThreadsArriveInCommitOrder(
        concurrency: Bank.Concurrency, notifications: Bank.ChangeNotifications
    ) async throws {
        // In commit order, each account's notifications chain: every old balance is the previous new one.
        let bank = Bank(concurrency: concurrency, notificationQueue: queue, changeNotifications: notifications)
        let recorder = ChangeRecorder(bank: bank)
        let accounts = try (0..<8).map { _ in try bank.openAccount(initialBalance: .amount("100.00")) }
        let transfers = Atomic<Int>(0)
        await onThreads(4, rounds: 1_000) { _, _ in
            let from = accounts.randomElement()!
            let to = accounts.randomElement()!
            let amount = Money(minorUnits: .random(in: 1...5_000))
            if (try? bank.transferMoneyAmount(amount, from: from, to: to)) != nil {
                transfers.add(1, ordering: .relaxed)
            }
        }
        #expect(bank.totalBalanceInAllAccounts == .amount("800.00"))
        let changes = await recorder.waitFor(8 + 2 * transfers.load(ordering: .relaxed))
        #expect(changes.count == 8 + 2 * transfers.load(ordering: .relaxed))
        var last: [AccountID: Money] = [:]
        var broken = 0
        for change in changes {
            if let previous = last[change.account], previous != change.oldBalance { broken += 1 }
            last[change.account] = change.newBalance
        }
        #expect(broken == 0)
        for account in accounts { #expect(last[account.id] == account.balance) }
    }

    @Test(arguments: both, announcing)
    func observersMayCallBackIntoTheBank(
        concurrency: Bank.Concurrency, notifications: Bank.ChangeNotifications
    ) async throws {
        let bank = Bank(concurrency: concurrency, notificationQueue: queue, changeNotifications: notifications)
        let reserve = try bank.openAccount(initialBalance: .amount("100.00"))
        let watched = try bank.openAccount()
        let seen = Atomic<Int>(0)
        let recorder = ChangeRecorder(bank: bank) { change in
            // Synchronously, from the notification: a read and a transfer, no deadlock.
            guard change.account == watched.id, change.newBalance > .zero, change.newBalance < .amount("3.00") else {
                return
            }
            _ = watched.balance
            try? bank.transferMoneyAmount(.amount("1.00"), from: reserve, to: watched)
            seen.add(1, ordering: .relaxed)
        }
        try watched.addMoney(.amount("1.00"))
        // The opening notifications may have gone out before the recorder started listening, so
        // wait for the last change the observer causes, not for a count.
        _ = await recorder.waitUntil { changes in
            changes.contains { $0.account == watched.id && $0.newBalance == .amount("3.00") }
        }
        #expect(watched.balance == .amount("3.00"))
        #expect(seen.load(ordering: .relaxed) == 2)
    }

    @Test func aBatchCarriesEveryChangeCommittedWhileTheAnnouncerWasAway() async throws {
        let stalled = DispatchQueue(label: "stalled notifications")
        let bank = Bank(notificationQueue: stalled, changeNotifications: .batched)
        let recorder = ChangeRecorder(bank: bank)
        stalled.suspend()
        let account = try bank.openAccount()
        for _ in 0..<20 { try account.addMoney(.amount("1.00")) }
        stalled.resume()
        let changes = await recorder.waitFor(21)
        await drain(stalled)  // anything posted twice, or late, would be there by now
        #expect(changes.map(\.newBalance) == (0...20).map { Money(minorUnits: Int64($0) * 100) })
        #expect(recorder.postCount(Bank.accountsDidChangeNotification) == 1)
        #expect(recorder.postCount(Bank.accountDidChangeNotification) == 0)
    }

    @Test func aBankAnnouncingEachChangePostsOneNotificationPerChange() async throws {
        let bank = Bank(notificationQueue: queue)
        let recorder = ChangeRecorder(bank: bank)
        let alice = try bank.openAccount(initialBalance: .amount("10.00"))
        let bob = try bank.openAccount()
        try bank.transferMoneyAmount(.amount("1.00"), from: alice, to: bob)
        #expect(await recorder.waitFor(4).count == 4)
        await drain(queue)
        #expect(recorder.postCount(Bank.accountDidChangeNotification) == 4)
        #expect(recorder.postCount(Bank.accountsDidChangeNotification) == 0)
    }

    @Test func anObserverThatKeepsNotificationsKeepsEachOnesChange() async throws {
        // The changes of one batch share a notification value whose `userInfo` the announcer
        // updates in place: what an observer kept must not change under it.
        let stalled = DispatchQueue(label: "stalled notifications")
        let bank = Bank(notificationQueue: stalled)
        let kept = KeptNotifications()
        let observer = NotificationCenter.default.addObserver(
            forName: Bank.accountDidChangeNotification, object: bank, queue: nil
        ) { kept.keep($0) }
        defer { NotificationCenter.default.removeObserver(observer) }
        stalled.suspend()  // so that all 21 changes are posted as one batch
        let account = try bank.openAccount()
        for _ in 0..<20 { try account.addMoney(.amount("1.00")) }
        stalled.resume()
        await drain(stalled)
        let notifications = kept.all
        #expect(notifications.allSatisfy { $0.userInfo?.count == 1 })
        let balances = notifications.compactMap { ($0.userInfo?[Bank.changeKey] as? AccountChange)?.newBalance }
        #expect(balances == (0...20).map { Money(minorUnits: Int64($0) * 100) })
    }

    // MARK: - Totals

    @Test(arguments: both)
    func theTotalNeverChangesUnderConcurrentTransfers(concurrency: Bank.Concurrency) async throws {
        let bank = Bank(concurrency: concurrency, notificationQueue: queue)
        let accounts = try (0..<16).map { _ in try bank.openAccount(initialBalance: .amount("50.00")) }
        let wrongTotals = await totalsSeenDuring(bank: bank) { random in
            try? bank.transferMoneyAmount(
                Money(minorUnits: .random(in: 1...2_000, using: &random)),
                from: accounts.randomElement(using: &random)!, to: accounts.randomElement(using: &random)!)
        }
        #expect(wrongTotals == 0)
    }

    @Test func theTotalCheckCatchesATransferMadeOfTwoSteps() async throws {
        // A deliberately broken transfer, withdrawal then deposit in two separate accesses: the
        // same check must see the money missing in between.
        let bank = Bank(notificationQueue: queue)
        let accounts = try (0..<16).map { _ in try bank.openAccount(initialBalance: .amount("50.00")) }
        let wrongTotals = await totalsSeenDuring(bank: bank) { random in
            let amount = Money(minorUnits: .random(in: 1...2_000, using: &random))
            let from = accounts.randomElement(using: &random)!
            let to = accounts.randomElement(using: &random)!
            guard from != to, (try? from.subtractMoney(amount)) != nil else { return }
            sched_yield()
            try? to.addMoney(amount)
        }
        #expect(wrongTotals > 0)
    }

    /// Runs `transfer` on three threads while a fourth reads the total; returns how many totals
    /// differed from the one at the start.
    private func totalsSeenDuring(
        bank: Bank, transfer: @escaping @Sendable (inout SystemRandomNumberGenerator) -> Void
    ) async -> Int {
        let expected = bank.totalBalanceInAllAccounts
        let wrong = Atomic<Int>(0)
        let transfersDone = Atomic<Int>(0)
        await onThreads(4) { thread in
            var random = SystemRandomNumberGenerator()
            if thread == 0 {
                while transfersDone.load(ordering: .relaxed) < 3 {
                    if bank.totalBalanceInAllAccounts != expected { wrong.add(1, ordering: .relaxed) }
                }
            } else {
                for _ in 0..<3_000 { transfer(&random) }
                transfersDone.add(1, ordering: .relaxed)
            }
        }
        return wrong.load(ordering: .relaxed)
    }

    @Test(arguments: both)
    func asynchronousTotalsArriveOnTheGivenQueue(concurrency: Bank.Concurrency) async throws {
        let bank = Bank(concurrency: concurrency, notificationQueue: queue)
        for _ in 0..<10_000 { _ = try bank.openAccount(initialBalance: .amount("0.01")) }
        let delivery = DispatchQueue(label: "totals")
        let total: Money = await withCheckedContinuation { continuation in
            bank.totalBalance(deliverOn: delivery) { total in
                dispatchPrecondition(condition: .onQueue(delivery))
                continuation.resume(returning: total)
            }
        }
        #expect(total == .amount("100.00"))
        #expect(await bank.totalBalance() == .amount("100.00"))
    }

    @Test func asynchronousTotalsGoToTheMainQueueByDefault() async throws {
        let bank = Bank(notificationQueue: queue)
        _ = try bank.openAccount(initialBalance: .amount("2.00"))
        let total: Money = await withCheckedContinuation { continuation in
            bank.totalBalance { total in
                dispatchPrecondition(condition: .onQueue(.main))
                continuation.resume(returning: total)
            }
        }
        #expect(total == .amount("2.00"))
    }

    // MARK: - Readers-writer configuration

    @Test func readersWriterReadsRunSideBySide() async throws {
        let bank = Bank(concurrency: .readersWriter, notificationQueue: queue)
        guard case .readersWriter(let ledger) = bank.store else {
            Issue.record("a readers-writer bank must hold its ledger in a ReadersWriter")
            return
        }
        #expect(await readsOverlap { inside in ledger.read { _ in inside() } })
    }

    @Test func bothConfigurationsGiveTheSameResults() throws {
        func run(_ concurrency: Bank.Concurrency) throws -> [String] {
            let bank = Bank(concurrency: concurrency, notificationQueue: queue)
            var random = SplitMix64(seed: 7)
            let accounts = try (0..<10).map { _ in
                try bank.openAccount(initialBalance: Money(minorUnits: .random(in: 0...10_000, using: &random)))
            }
            var outcomes: [String] = []
            for _ in 0..<2_000 {
                let account = accounts.randomElement(using: &random)!
                let amount = Money(minorUnits: .random(in: -100...5_000, using: &random))
                do throws(BankError) {
                    switch Int.random(in: 0..<20, using: &random) {
                    case 0: outcomes.append("close \(try account.closeAccount())")
                    case 1..<6: try account.addMoney(amount)
                    case 6..<10: try account.subtractMoney(amount)
                    default:
                        try bank.transferMoneyAmount(amount, from: account, to: accounts.randomElement(using: &random)!)
                    }
                    outcomes.append("ok")
                } catch {
                    outcomes.append("\(error)")
                }
            }
            return outcomes + snapshot(bank)
        }
        #expect(try run(.serial) == run(.readersWriter))
    }
}

// MARK: - Back-pressure on announcements

@Suite("Bank announcement backlog", .patientTimeLimit(minutes: 10))
struct BankAnnouncementBacklogTests {
    /// Two threads deposit as fast as they can while the notification queue posts; a third keeps
    /// sampling how many committed changes are not yet posted. Returns the most it saw.
    ///
    /// The notification observer makes the announcer as slow as it can be without stalling for
    /// ever: it holds each notification until a committer is held back or the committers are done.
    /// However fast TSan or the machine lets each side run, back-pressure is then all that keeps
    /// the backlog bounded.
    private func largestBacklog(limit: Int) async throws -> Int {
        let queue = DispatchQueue(label: "notifications")
        // Patience past any wait here: a commit that gave up waiting (as one can, past the default
        // patience, under TSan on a busy machine) would go past the limit, as it should, and this
        // test is about the limit.
        let announcer = Announcer(limit: limit, patience: .seconds(300))
        let bank = Bank(concurrency: .serial, notificationQueue: queue, announcer: announcer)
        let finished = Flag()
        let observer = NotificationCenter.default.addObserver(
            forName: Bank.accountDidChangeNotification, object: bank, queue: nil
        ) { _ in
            while !finished.isRaised, !bank.announcer.isHoldingBackCommitters { sched_yield() }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let account = try bank.openAccount()
        let largest = Atomic<Int>(0)
        onNewThread {
            while !finished.isRaised {
                let backlog = bank.store.read { $0.changesRecorded } - bank.announcer.delivered
                largest.max(backlog, ordering: .relaxed)
                sched_yield()  // sample, don't hog a core the committers and the announcer need
            }
        }
        await onThreads(2, rounds: 20_000) { _, _ in
            try? account.addMoney(.amount("0.01"))
        }
        finished.raise()
        return largest.load(ordering: .relaxed)
    }

    @Test func whatIsCommittedButNotPostedStaysWithinTheLimit() async throws {
        // Each committer may be one commit past the limit when it starts to wait.
        let backlog = try await largestBacklog(limit: 1_024)
        #expect(backlog <= 1_024 + 2)
    }

    @Test func theBacklogTestCatchesABankWithoutBackPressure() async throws {
        let backlog = try await largestBacklog(limit: .max)
        withKnownIssue("an unlimited backlog grows while the announcer lags") {
            #expect(backlog <= 1_024 + 2)
        }
    }

    /// How many notifications the announcer posts, while committers keep it busy, before a block
    /// queued on its notification queue after the first of them gets to run.
    private func notificationsBeforeOtherWork(limit: Int) async throws -> Int {
        let queue = DispatchQueue(label: "notifications")
        let bank = Bank(concurrency: .serial, notificationQueue: queue, announcer: Announcer(limit: limit))
        let account = try bank.openAccount()
        let finished = Flag()
        let posted = Atomic<Int>(0)
        let postedBeforeOtherWork = Atomic<Int>(-1)
        let observer = NotificationCenter.default.addObserver(
            forName: Bank.accountDidChangeNotification, object: bank, queue: nil
        ) { _ in
            if posted.add(1, ordering: .sequentiallyConsistent).newValue == 1 {
                queue.async {
                    postedBeforeOtherWork.store(
                        posted.load(ordering: .sequentiallyConsistent), ordering: .sequentiallyConsistent)
                }
            }
            // As slow as the announcer can be without stalling: the committer stays at the limit.
            while !finished.isRaised, !bank.announcer.isHoldingBackCommitters { sched_yield() }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        await onThreads(1, rounds: 20 * limit) { _, _ in
            try? account.addMoney(.amount("0.01"))
        }
        finished.raise()
        await drain(queue)
        return postedBeforeOtherWork.load(ordering: .sequentiallyConsistent)
    }

    @Test func theAnnouncerGivesItsQueueBackBetweenBatches() async throws {
        // A batch is a quarter of the limit: 16. Other work queued meanwhile runs after that batch.
        // Before it did, an announcer kept busy never returned, and everything else queued for the
        // notification queue (asynchronous totals among it) piled up behind it: `bank simulate`
        // grew by about 8 bytes per operation. On that engine this counted every notification.
        let posted = try await notificationsBeforeOtherWork(limit: 64)
        #expect(posted >= 1 && posted <= 16)
    }

    @Test func aNotificationQueueThatStallsSlowsCommitsDownButNeverDeadlocks() async throws {
        let queue = DispatchQueue(label: "stalled notifications")
        let bank = Bank(
            concurrency: .serial, notificationQueue: queue,
            announcer: Announcer(limit: 10, patience: .milliseconds(100)))
        let recorder = ChangeRecorder(bank: bank) { _ in }  // before the first change, so it hears all
        let account = try bank.openAccount()
        queue.suspend()
        await onThreads(1, rounds: 20) { _, _ in
            // Ten of the 20 wait 0.1 s each.
            try? account.addMoney(.amount("1.00"))
        }
        queue.resume()
        #expect(await recorder.waitFor(21).count == 21)
        #expect(bank.totalBalanceInAllAccounts == .amount("20.00"))
    }
}

/// Whole notifications, as an observer kept them.
private final class KeptNotifications: @unchecked Sendable {
    // @unchecked: `notifications` is only touched while `lock` is held.
    private let lock = NSLock()
    private var notifications: [Notification] = []

    func keep(_ notification: Notification) { lock.withLock { notifications.append(notification) } }

    var all: [Notification] { lock.withLock { notifications } }
}
