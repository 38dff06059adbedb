import Dispatch
import ExclusionTestSupport
import Foundation
import Testing

@testable import Banking

/// The code of the article "The three exercises" (Banking.docc), so that it keeps compiling and
/// keeps printing what the article says it prints.
@Suite("The bank exercises article", .patientTimeLimit(minutes: 10))
struct BankExercisesArticleTests {
    let queue = DispatchQueue(label: "notifications")

    @Test func transfersCheckBeforeTheyChange() throws {
        let bank = Bank(notificationQueue: queue)
        let alice = try bank.openAccount(initialBalance: Money("10.00")!)
        let bob = try bank.openAccount()
        var printed = ""
        do {
            try bank.transferMoneyAmount(Money("15.00")!, from: alice, to: bob)
        } catch .insufficientFunds(_, let balance, _) {
            printed = "only \(balance) available"
        }
        #expect(printed == "only 10.00 available")
        #expect(alice.balance == Money("10.00")! && bob.balance == .zero)
    }

    @Test func notificationsArriveOnTheQueueInCommitOrder() async throws {
        let bank = Bank(notificationQueue: queue)
        let printed = Recorder<Money>()
        let observer = NotificationCenter.default.addObserver(
            forName: Bank.accountDidChangeNotification, object: bank, queue: nil
        ) { note in
            let change = note.userInfo?[Bank.changeKey] as? AccountChange
            printed.record(change?.newBalance ?? .zero)
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        let alice = try bank.openAccount(initialBalance: Money("10.00")!)
        try alice.addMoney(Money("5.00")!)
        await drain(queue)
        #expect(printed.values == [Money("10.00")!, Money("15.00")!])
    }

    @Test func aLoopOverChangesGetsThemInCommitOrder() async throws {
        let bank = Bank(notificationQueue: queue)
        let printed = Recorder<String>()
        let changes = bank.changes
        let started = Flag()
        let loop = onADedicatedThread {
            var iterator = changes.makeAsyncIterator()
            started.raise()
            // The article's loop, over the iterator made before the changes below.
            while let change = await iterator.next(isolation: nil) {
                printed.record("\(change.account) \(change.newBalance)")  // in commit order
            }
        }
        #expect(await eventually { started.isRaised })
        let alice = try bank.openAccount(initialBalance: Money("10.00")!)
        try alice.addMoney(Money("5.00")!)
        #expect(await eventually { printed.values.count == 2 })
        loop.cancel()
        _ = await loop.outcome()
        #expect(printed.values == ["#1 10.00", "#1 15.00"])
    }

    @Test func batchedNotificationsCarryTheChangesOfARound() async throws {
        let printed = Recorder<[Money]>()
        let batching = Bank(notificationQueue: queue, changeNotifications: .batched)
        let batchObserver = NotificationCenter.default.addObserver(
            forName: Bank.accountsDidChangeNotification, object: batching, queue: nil
        ) { note in
            let changes = note.userInfo?[Bank.changesKey] as? [AccountChange] ?? []
            printed.record(changes.map(\.newBalance))
        }
        defer { NotificationCenter.default.removeObserver(batchObserver) }
        queue.suspend()  // the announcer is away while both changes commit: one round takes both
        let alice = try batching.openAccount(initialBalance: Money("10.00")!)
        try alice.addMoney(Money("5.00")!)
        queue.resume()
        await drain(queue)
        #expect(printed.values == [[Money("10.00")!, Money("15.00")!]])
    }

    @Test func theTotalIsDeliveredOnTheQueueYouPick() async throws {
        let bank = Bank(notificationQueue: queue)
        _ = try bank.openAccount(initialBalance: Money("10.00")!)
        let printed: String = await withCheckedContinuation { continuation in
            bank.totalBalance(deliverOn: queue) { total in
                dispatchPrecondition(condition: .onQueue(queue))
                continuation.resume(returning: "the bank holds \(total)")
            }
        }
        #expect(printed == "the bank holds 10.00")
        #expect(await bank.totalBalance() == Money("10.00")!)
    }
}
