import Banking
import Benchmark
import Dispatch
import Foundation

// The floor of a notification per change: `NotificationCenter.default.post` alone, with no bank
// around it. Each design's notification queue does one of these per changed account, the Bank with
// its `userInfo` to the transfer rows' observer, the textbook with its own behind an `async` (and,
// as in its transfer rows, to no observer), so the textbook's row over the Bank's is about the most
// the per-change rows can show while every change is posted. One iteration is a million posts, so
// each time is per post.

func notificationFloorBenchmarks() {
    /// The Bank's change for post `step` of a run.
    func change(_ account: Account, _ step: Int) -> AccountChange {
        AccountChange(
            account: account.id, oldBalance: Money(minorUnits: 1_000_000),
            newBalance: Money(minorUnits: Int64(step)), isClosed: false)
    }

    Benchmark("floor: post the Bank's notification, a userInfo per post") { benchmark in
        let (bank, accounts) = makeBank(.serial, accounts: 1)
        let delivered = DeliveredChanges(of: bank, until: benchmark.scaledIterations.count)
        benchmark.startMeasurement()
        for step in benchmark.scaledIterations {
            NotificationCenter.default.post(
                name: Bank.accountDidChangeNotification, object: bank,
                userInfo: [Bank.changeKey: change(accounts[0], step)])
        }
        delivered.wait()
    }
    // As the Bank posts a batch: one notification, its userInfo's value replaced in place.
    Benchmark("floor: post the Bank's notification, as the Bank does") { benchmark in
        let (bank, accounts) = makeBank(.serial, accounts: 1)
        let delivered = DeliveredChanges(of: bank, until: benchmark.scaledIterations.count)
        var notification = Notification(
            name: Bank.accountDidChangeNotification, object: bank, userInfo: [Bank.changeKey: change(accounts[0], 0)])
        let changeIndex = notification.userInfo!.index(forKey: Bank.changeKey)!
        benchmark.startMeasurement()
        for step in benchmark.scaledIterations {
            notification.userInfo!.values[changeIndex] = change(accounts[0], step)
            NotificationCenter.default.post(notification)
        }
        delivered.wait()
    }
    Benchmark("floor: the textbook's async and post") { benchmark in
        let notifications = DispatchQueue(label: "notifications")
        let bank = TextbookBank(accounts: 1, balance: 0, notificationQueue: notifications)
        benchmark.startMeasurement()
        for step in benchmark.scaledIterations { bank.announce(0, balance: Int64(step)) }
        notifications.sync {}
    }
}
