/// The committed changes that iterators of ``Bank/changes`` have yet to take, part of the ledger.
///
/// Each iterator has a cursor: the place (in the ledger's count of recorded changes) of the next
/// change it will take. The log keeps every change from the oldest cursor on and nothing older, so
/// it holds what the slowest iterator hasn't taken yet, and nothing at all while nobody iterates:
/// a bank nobody watches this way pays one check per commit.
///
/// It lives in the ledger, so a change enters it in the same access that commits it: commit order
/// is log order, and a change can be neither missed nor recorded twice.
struct ChangeLog: Sendable {
    /// The changes from place `base` on; every iterator has taken the first `start` of them.
    private var changes: [AccountChange] = []
    private var base = 0
    private var start = 0
    /// Each iterator's next place, by its number.
    private var cursors: [Int: Int] = [:]
    private var lastNumber = 0
    /// Whether the bank went away: nothing more will be recorded.
    private(set) var isEnded = false

    /// Whether an iterator is taking changes: only then are changes recorded.
    var isWatched: Bool { !cursors.isEmpty }

    /// The place after the last change recorded.
    private var endPlace: Int { base + changes.count }

    /// The place before which every iterator has taken every change; nil when nobody iterates.
    var oldestCursor: Int? { cursors.values.min() }

    /// Adds an iterator that takes every change from `place` (the ledger's next) on; returns its
    /// number.
    mutating func addIterator(at place: Int) -> Int {
        if !isWatched {
            changes.removeAll(keepingCapacity: false)
            start = 0
            base = place
        }
        lastNumber += 1
        cursors[lastNumber] = place
        return lastNumber
    }

    /// Removes an iterator, and whatever only it had yet to take.
    mutating func removeIterator(_ number: Int) {
        cursors[number] = nil
        trim()
    }

    /// Records one commit's changes, in order. Only called while the log is watched.
    mutating func record(_ first: AccountChange, _ second: AccountChange?) {
        changes.append(first)
        if let second { changes.append(second) }
    }

    /// Whether the iterator has something to take, or should end: more changes, or the bank gone.
    func hasNews(for number: Int) -> Bool {
        guard let cursor = cursors[number] else { return true }
        return cursor < endPlace || isEnded
    }

    /// Takes the iterator's next changes, at most `limit`; empty when it has none, which after
    /// `hasNews` means the bank has gone (or the iterator was removed).
    mutating func take(for number: Int, limit: Int) -> [AccountChange] {
        guard let cursor = cursors[number] else { return [] }
        let first = cursor - base
        let last = min(changes.count, first + limit)
        let taken = Array(changes[first..<last])
        cursors[number] = base + last
        trim()
        return taken
    }

    /// Ends every iterator once it has taken what is left: the bank went away.
    mutating func end() { isEnded = true }

    /// Forgets the changes every iterator has taken. Dropping them from the front one take at a
    /// time would move the rest each time, so they are only counted off, and the array is
    /// compacted once they are half of it.
    private mutating func trim() {
        guard let oldest = oldestCursor else {
            base = endPlace
            changes.removeAll(keepingCapacity: false)
            start = 0
            return
        }
        start = oldest - base
        if start == changes.count {
            base += start
            changes.removeAll(keepingCapacity: true)
            start = 0
        } else if start > changes.count / 2 {
            changes.removeFirst(start)
            base += start
            start = 0
        }
    }
}
