import Dispatch
import ExclusionTestSupport
import Foundation
import Synchronization

@testable import Banking

extension Money {
    /// Test shorthand: `.amount("12.34")`.
    static func amount(_ text: String) -> Money { Money(text)! }
}

/// Collects the changes the bank announces as they are delivered, whichever way it announces them.
final class ChangeRecorder: @unchecked Sendable {
    // @unchecked: `changes` and `posts` are only touched while `lock` is held; `observers` is set
    // once in init.
    private let lock = NSLock()
    private var changes: [AccountChange] = []
    private var posts: [Notification.Name: Int] = [:]
    private var observers: [any NSObjectProtocol] = []
    private let onChange: @Sendable (AccountChange) -> Void

    init(bank: Bank, onChange: @escaping @Sendable (AccountChange) -> Void = { _ in }) {
        self.onChange = onChange
        observers = [
            NotificationCenter.default.addObserver(
                forName: Bank.accountDidChangeNotification, object: bank, queue: nil
            ) { [weak self] notification in
                guard let self, let change = notification.userInfo?[Bank.changeKey] as? AccountChange else { return }
                record([change], from: notification)
            },
            NotificationCenter.default.addObserver(
                forName: Bank.accountsDidChangeNotification, object: bank, queue: nil
            ) { [weak self] notification in
                guard let self, let batch = notification.userInfo?[Bank.changesKey] as? [AccountChange] else { return }
                record(batch, from: notification)
            },
        ]
    }

    private func record(_ batch: [AccountChange], from notification: Notification) {
        lock.withLock {
            changes += batch
            posts[notification.name, default: 0] += 1
        }
        for change in batch { onChange(change) }
    }

    deinit {
        for observer in observers { NotificationCenter.default.removeObserver(observer) }
    }

    /// How many notifications named `name` were delivered.
    func postCount(_ name: Notification.Name) -> Int { lock.withLock { posts[name, default: 0] } }

    var recorded: [AccountChange] { lock.withLock { changes } }

    /// Waits until `count` notifications have arrived (or a minute passed without a new one).
    func waitFor(_ count: Int) async -> [AccountChange] {
        await waitUntil { $0.count >= count }
    }

    /// Waits until the notifications so far satisfy `condition`, or a minute passed without a new
    /// one. (Slow isn't stuck: other tests' posts to the one notification center delay these.)
    func waitUntil(_ condition: ([AccountChange]) -> Bool) async -> [AccountChange] {
        await waitWhileProgressing(
            until: { condition(recorded) }, progress: { recorded.count }, stallLimit: .seconds(60),
            polling: .milliseconds(2))
        return recorded
    }
}
