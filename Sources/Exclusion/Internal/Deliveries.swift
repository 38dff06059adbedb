import Dispatch

/// Results of asynchronous work, collected while state is held and handed out after it is released.
///
/// Main-thread gravity: a completion must never run inside an access, or an observer that calls back
/// into the same instance would deadlock. Work that runs with the state held appends here; the
/// owner of the access flushes after letting go of the state.
struct _Deliveries {
    private var _items: [(queue: DispatchQueue?, work: @Sendable () -> Void)] = []

    var isEmpty: Bool { _items.isEmpty }

    /// Runs `work` on `queue` once the state is released.
    mutating func deliver(on queue: DispatchQueue, _ work: @escaping @Sendable () -> Void) {
        _items.append((queue, work))
    }

    /// Runs `work` on the releasing thread once the state is released (it must not block).
    mutating func runAfterRelease(_ work: @escaping @Sendable () -> Void) {
        _items.append((nil, work))
    }

    /// Hands everything out in order. Consecutive deliveries to the same queue go out as one block,
    /// so a burst of completions costs one dispatch instead of one each.
    consuming func flush() {
        var start = _items.startIndex
        while start < _items.endIndex {
            guard let queue = _items[start].queue else {
                _items[start].work()
                start += 1
                continue
            }
            var end = start + 1
            while end < _items.endIndex, _items[end].queue === queue { end += 1 }
            if end - start == 1 {
                queue.async(execute: _items[start].work)
            } else {
                let run = _items[start..<end].map(\.work)
                queue.async { for work in run { work() } }
            }
            start = end
        }
    }
}
