import Dispatch

/// Work that waits until an access has released the state: notifications, callbacks, results.
///
/// Main-thread gravity says to communicate on the main queue, and never while holding state: an
/// observer that calls back into the instance from inside the access would deadlock. An access
/// that changes something worth announcing posts the announcement to its outbox; the outbox is
/// emptied after the state is released.
///
/// ```swift
/// try ledger.access { ledger, outbox in
///     let change = try ledger.deposit(amount, into: id)
///     outbox.post(on: .main) { NotificationCenter.default.post(name: .balanceDidChange, object: change) }
/// }
/// ```
///
/// Work posted by different accesses of one instance leaves in the order the accesses held the
/// state, so a serial queue runs it in commit order, whichever threads the accesses ran on.
public struct Outbox {
    // Optional, so that the outbox every access creates costs nothing until something is posted.
    @usableFromInline var _items: [(queue: DispatchQueue?, work: @Sendable () -> Void)]?

    @inlinable init() { _items = nil }

    @inlinable var isEmpty: Bool { _items == nil }

    /// Runs `work` on `queue` once the state is released.
    ///
    /// - Parameters:
    ///   - queue: Where `work` runs, for example `.main`.
    ///   - work: The notification, callback or other communication. It runs exactly once.
    public mutating func post(on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        _items.appendCreatingArray((queue, work))
    }

    /// Runs `work` on the releasing thread once the state is released (it must not block).
    mutating func runAfterRelease(_ work: @escaping @Sendable () -> Void) {
        _items.appendCreatingArray((nil, work))
    }

    /// Hands everything out in order. Consecutive deliveries to the same queue go out as one block,
    /// so a burst of completions costs one dispatch instead of one each.
    @usableFromInline
    consuming func flush() {
        guard let items = _items else { return }
        var start = items.startIndex
        while start < items.endIndex {
            guard let queue = items[start].queue else {
                items[start].work()
                start += 1
                continue
            }
            var end = start + 1
            while end < items.endIndex, items[end].queue === queue { end += 1 }
            if end - start == 1 {
                queue.async(execute: items[start].work)
            } else {
                let run = items[start..<end].map(\.work)
                queue.async { for work in run { work() } }
            }
            start = end
        }
    }
}

extension Optional {
    /// Appends to the array, creating it first if there is none yet.
    fileprivate mutating func appendCreatingArray<Element>(_ element: Element) where Wrapped == [Element] {
        if self == nil { self = [] }
        self!.append(element)
    }
}
