// MARK: - Changes as a sequence

extension Bank {
    /// Every change the bank commits, as an asynchronous sequence: in commit order, none lost,
    /// none twice.
    ///
    /// ```swift
    /// @MainActor func watch(_ bank: Bank) async {
    ///     for await change in bank.changes {
    ///         balanceLabels[change.account]?.text = "\(change.newBalance)"   // on the main actor
    ///     }
    /// }
    /// ```
    ///
    /// The same promise as the notifications, without `NotificationCenter` or `userInfo`:
    /// - A loop gets every change committed after it started (after its iterator was made), each
    ///   exactly once, in the order the changes were committed. Several loops each get all of them.
    /// - Changes reach a loop in batches, as many as were committed since it last asked: a loop
    ///   costs the committers nothing per change while it is busy, and a loop that keeps up costs
    ///   them one hand-over per batch.
    /// - Back-pressure as for the notifications: a loop that falls more than
    ///   ``announcementBacklogLimit`` changes behind (or stops asking) makes each commit wait for it
    ///   a few seconds at the most, so committers slow down but never deadlock, and what is kept
    ///   for it stays bounded while it keeps asking.
    /// - Ending the loop, or cancelling its task, stops it at once and frees what it hadn't taken.
    ///   The sequence ends when the bank goes away, after the last change.
    /// - Elements arrive in the isolation of the loop: on the main actor for a loop there. The loop
    ///   may call into the bank (read a balance, transfer money): nothing is held while it runs.
    public var changes: some AsyncSequence<AccountChange, Never> & Sendable {
        BankChanges(store: store, announcer: announcer)
    }
}

/// The sequence of ``Bank/changes``: each iterator takes batches from the ledger's change log.
struct BankChanges: AsyncSequence, Sendable {
    typealias Element = AccountChange
    typealias Failure = Never

    let store: LedgerStore
    let announcer: Announcer

    func makeAsyncIterator() -> Iterator {
        Iterator(reader: ChangeReader(store: store, announcer: announcer))
    }

    struct Iterator: AsyncIteratorProtocol, Sendable {
        typealias Element = AccountChange
        typealias Failure = Never

        let reader: ChangeReader
        var batch: [AccountChange] = []
        var index = 0

        init(reader: ChangeReader) {
            self.reader = reader
        }

        mutating func next(isolation actor: isolated (any Actor)?) async -> AccountChange? {
            if index == batch.count {
                batch = await reader.nextBatch()
                index = 0
                if batch.isEmpty { return nil }
            }
            defer { index += 1 }
            return batch[index]
        }

        nonisolated(nonsending) mutating func next() async -> AccountChange? {
            await next(isolation: #isolation)
        }
    }
}

/// One iterator's place in the ledger's change log: added when the iterator is made, removed when
/// it goes away, so that a loop that ended holds nothing back.
final class ChangeReader: Sendable {
    private let store: LedgerStore
    private let announcer: Announcer
    private let number: Int

    init(store: LedgerStore, announcer: Announcer) {
        self.store = store
        self.announcer = announcer
        number = store.change { ledger in
            let number = ledger.addChangesIterator()
            announcer.iteratorsTook(upTo: ledger.changeLog.oldestCursor)
            return number
        }
    }

    deinit {
        store.change { [number, announcer] ledger in
            ledger.changeLog.removeIterator(number)
            announcer.iteratorsTook(upTo: ledger.changeLog.oldestCursor)
        }
    }

    /// The changes committed since the last batch, waiting for one if there are none; empty when
    /// the bank has gone and every change was taken, or when the task was cancelled.
    nonisolated(nonsending) func nextBatch() async -> [AccountChange] {
        let number = number
        let announcer = announcer
        // A quarter of the backlog limit at a time, as the announcer takes them.
        let limit = max(1, announcer.limit / 4)
        let batch = try? await store.change(when: { $0.changeLog.hasNews(for: number) }) { ledger in
            let oldest = ledger.changeLog.oldestCursor
            let batch = ledger.changeLog.take(for: number, limit: limit)
            let newOldest = ledger.changeLog.oldestCursor
            if newOldest != oldest { announcer.iteratorsTook(upTo: newOldest) }
            return batch
        }
        return batch ?? []
    }
}
