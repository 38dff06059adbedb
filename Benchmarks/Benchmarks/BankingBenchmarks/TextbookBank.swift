import Dispatch
import Foundation

/// The textbook design the `Bank` is measured against: one serial dispatch queue, `sync` for every
/// call, and each change posted to the notification queue as it happens, from inside the block.
final class TextbookBank: @unchecked Sendable {
    // @unchecked: `balances` is only touched on `queue`.
    private let queue = DispatchQueue(label: "textbook member queue")
    private let notificationQueue: DispatchQueue
    private var balances: [Int64]

    static let didChange = Notification.Name("TextbookBankDidChange")

    init(accounts: Int, balance: Int64, notificationQueue: DispatchQueue) {
        balances = Array(repeating: balance, count: accounts)
        self.notificationQueue = notificationQueue
    }

    func transfer(_ amount: Int64, from source: Int, to destination: Int) -> Bool {
        queue.sync {
            guard source != destination, amount > 0, balances[source] >= amount else { return false }
            balances[source] -= amount
            balances[destination] += amount
            announce(source, balance: balances[source])
            announce(destination, balance: balances[destination])
            return true
        }
    }

    /// Posts one account's change from the notification queue.
    func announce(_ account: Int, balance: Int64) {
        notificationQueue.async { [self] in
            NotificationCenter.default.post(
                name: Self.didChange, object: self, userInfo: ["account": account, "balance": balance])
        }
    }

    func balance(of account: Int) -> Int64 {
        queue.sync { balances[account] }
    }
}
