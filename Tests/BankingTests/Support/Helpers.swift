import Banking
import Dispatch
import ExclusionTestSupport
import Foundation
import Synchronization

extension Money {
    /// Test shorthand: `.amount("12.34")`.
    static func amount(_ text: String) -> Money { Money(text)! }
}

/// Collects the bank's notifications as they are delivered.
final class ChangeRecorder: @unchecked Sendable {
    // @unchecked: `changes` is only touched while `lock` is held; `observer` is set once in init.
    private let lock = NSLock()
    private var changes: [AccountChange] = []
    private var observer: (any NSObjectProtocol)?
    private let onChange: @Sendable (AccountChange) -> Void

    init(bank: Bank, onChange: @escaping @Sendable (AccountChange) -> Void = { _ in }) {
        self.onChange = onChange
        observer = NotificationCenter.default.addObserver(
            forName: Bank.accountDidChangeNotification, object: bank, queue: nil
        ) { [weak self] notification in
            guard let self, let change = notification.userInfo?[Bank.changeKey] as? AccountChange else { return }
            lock.withLock { changes.append(change) }
            self.onChange(change)
        }
    }

    deinit {
        if let observer { NotificationCenter.default.removeObserver(observer) }
    }

    var recorded: [AccountChange] { lock.withLock { changes } }

    /// Waits until `count` notifications have arrived (or a minute passed).
    func waitFor(_ count: Int) async -> [AccountChange] {
        await waitUntil { $0.count >= count }
    }

    /// Waits until the notifications so far satisfy `condition` (or a minute passed).
    func waitUntil(_ condition: ([AccountChange]) -> Bool) async -> [AccountChange] {
        let deadline = ContinuousClock.now + .seconds(60)
        while !condition(recorded), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(2))
        }
        return recorded
    }
}
