import Exclusion
import Foundation
import Synchronization

/// The back-pressure between a bank's committers and the readers of its changes (the announcer,
/// and every iterator of ``Bank/changes``): how far the slowest of them has got, and a place for
/// committers that got too far ahead of it to wait.
///
/// Waiting must never deadlock, and the announcer runs on a queue the bank doesn't own:
/// - A commit made by a notification observer (one that transfers money, say) never waits: it runs
///   on the announcer's own thread, and the announcer can't go on until it returns.
/// - A commit waits at most `patience` for the readers to catch up. If the notification queue
///   isn't being serviced (its thread is blocked, perhaps waiting for the committer), or an
///   iterator of `changes` stopped asking (its loop is busy, perhaps committing itself),
///   committers slow down instead of deadlocking, and the backlog grows past the limit only then.
final class Announcer: Sendable {
    /// Most changes that may wait to be posted before a commit waits.
    let limit: Int
    /// How long one commit waits for the announcer at most.
    let patience: Duration

    init(limit: Int = Bank.announcementBacklogLimit, patience: Duration = .seconds(5)) {
        self.limit = limit
        self.patience = patience
    }

    /// How far the readers have got. Committers that got too far ahead wait for it with a
    /// conditional access, which every change of it re-checks: nothing to signal, nothing to lose.
    private let progress = Exclusive(Progress(), label: "bank change readers' progress")
    /// `progress.delivered`, for the check every commit makes, which must not take a lock. It is
    /// written inside the access that changes `progress`, so it never runs ahead of it: a stale read
    /// only sends a committer to the exact check in `waitUntilWithinLimit`.
    private let deliveredSoFar = Atomic<Int>(0)
    private let announcing = Atomic<Int>(0)
    private let waiting = Atomic<Int>(0)

    /// Whether a committer is waiting for the readers right now.
    var isHoldingBackCommitters: Bool { waiting.load(ordering: .relaxed) > 0 }

    /// How many changes every reader has been given (at least; read without a lock).
    var delivered: Int { deliveredSoFar.load(ordering: .acquiring) }

    /// Runs the announcer's `body`, marking this thread as the announcer's while it runs.
    func onQueue(_ body: () -> Void) {
        announcing.store(Self.threadID(), ordering: .relaxed)
        body()
        announcing.store(0, ordering: .relaxed)
    }

    /// The announcer posted `count` more changes.
    func didAnnounce(_ count: Int) {
        progress.access {
            $0.posted += count
            deliveredSoFar.store($0.delivered, ordering: .releasing)
        }
    }

    /// The iterators of `changes` have taken every change before `cursor` (nil: there are none).
    ///
    /// Called inside the ledger access that moved the oldest cursor, so that calls land here in the
    /// order the cursors moved; `progress` is never held while the ledger is taken, so the nesting
    /// can't deadlock.
    func iteratorsTook(upTo cursor: Int?) {
        progress.access {
            $0.taken = cursor
            deliveredSoFar.store($0.delivered, ordering: .releasing)
        }
    }

    /// Waits, holding nothing, until the change at `place` is within the limit of what every
    /// reader was given, or `patience` has passed.
    func waitUntilWithinLimit(_ place: Int) {
        // A notification observer that commits runs on the announcer's thread: the announcer can't
        // go on until it returns, so it must not wait.
        guard announcing.load(ordering: .relaxed) != Self.threadID() else { return }
        let limit = limit
        waiting.add(1, ordering: .relaxed)
        // Past `patience` the commit goes on regardless (the `TimeoutError` is the answer).
        _ = try? progress.access(when: { place - $0.delivered <= limit }, timeout: patience) { _ in }
        waiting.subtract(1, ordering: .relaxed)
    }

    private static func threadID() -> Int { Int(bitPattern: pthread_self()) | 1 }
}

/// How far the readers of a bank's changes have got, in places (the ledger's count of recorded
/// changes).
private struct Progress {
    /// How many changes the announcer has posted.
    var posted = 0
    /// The place before which every iterator of `changes` has taken every change; nil when none
    /// iterates.
    var taken: Int?

    /// How many changes every reader has been given: the slower of the two.
    var delivered: Int { min(posted, taken ?? .max) }
}
