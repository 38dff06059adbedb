import Exclusion
import Foundation
import Synchronization

/// The back-pressure between a bank's committers and its announcer: how many changes have been
/// posted, and a place for committers that got too far ahead to wait.
///
/// Waiting must never deadlock, and the announcer runs on a queue the bank doesn't own:
/// - A commit made by a notification observer (one that transfers money, say) never waits: it runs
///   on the announcer's own thread, and the announcer can't go on until it returns.
/// - A commit waits at most `patience` for the announcer to catch up. If the notification queue
///   isn't being serviced (its thread is blocked, perhaps waiting for the committer), committers
///   slow down instead of deadlocking, and the backlog grows past the limit only then.
final class Announcer: Sendable {
    /// Most changes that may wait to be posted before a commit waits.
    let limit: Int
    /// How long one commit waits for the announcer at most.
    let patience: Duration

    init(limit: Int = Bank.announcementBacklogLimit, patience: Duration = .seconds(5)) {
        self.limit = limit
        self.patience = patience
    }

    /// How many changes have been posted. Committers that got too far ahead wait for it with a
    /// conditional access, which every `didAnnounce` re-checks: nothing to signal, nothing to lose.
    private let posted = Exclusive(0, label: "bank announcements posted")
    /// `posted`'s value, for the check every commit makes, which must not take a lock. It is
    /// written inside the access that changes `posted`, so it never runs ahead of it: a stale read
    /// only sends a committer to the exact check in `waitUntilWithinLimit`.
    private let postedSoFar = Atomic<Int>(0)
    private let announcing = Atomic<Int>(0)
    private let waiting = Atomic<Int>(0)

    /// Whether a committer is waiting for the announcer right now.
    var isHoldingBackCommitters: Bool { waiting.load(ordering: .relaxed) > 0 }

    /// How many changes have been posted (at least; read without a lock).
    var announced: Int { postedSoFar.load(ordering: .acquiring) }

    /// Runs the announcer's `body`, marking this thread as the announcer's while it runs.
    func onQueue(_ body: () -> Void) {
        announcing.store(Self.threadID(), ordering: .relaxed)
        body()
        announcing.store(0, ordering: .relaxed)
    }

    func didAnnounce(_ count: Int) {
        posted.access {
            $0 += count
            postedSoFar.store($0, ordering: .releasing)
        }
    }

    /// Waits, holding nothing, until the change at `place` is within the limit of what was posted,
    /// or `patience` has passed.
    func waitUntilWithinLimit(_ place: Int) {
        // A notification observer that commits runs on the announcer's thread: the announcer can't
        // go on until it returns, so it must not wait.
        guard announcing.load(ordering: .relaxed) != Self.threadID() else { return }
        let limit = limit
        waiting.add(1, ordering: .relaxed)
        // Past `patience` the commit goes on regardless (the `TimeoutError` is the answer).
        _ = try? posted.access(when: { place - $0 <= limit }, timeout: patience) { _ in }
        waiting.subtract(1, ordering: .relaxed)
    }

    private static func threadID() -> Int { Int(bitPattern: pthread_self()) | 1 }
}
