import ExclusionTestSupport
import Foundation
import Synchronization
import Testing

/// Measures whether the bodies an accessor runs overlap, and whether read-modify-write updates
/// made inside them get lost.
///
/// Its counters are atomics, so a broken accessor shows up as a wrong count instead of as a data
/// race: the same stress test runs clean under ThreadSanitizer and still proves, against a
/// deliberately broken accessor, that it can fail.
final class ExclusionProbe: Sendable {
    private let _inside = Atomic<Int>(0)
    private let _mostInside = Atomic<Int>(0)
    private let _counter = Atomic<Int>(0)

    /// The body under test: a deliberately slow, non-atomic increment of the counter.
    func body() {
        let inside = _inside.add(1, ordering: .sequentiallyConsistent).newValue
        _mostInside.raise(toAtLeast: inside)
        let value = _counter.load(ordering: .sequentiallyConsistent)
        sched_yield()  // let other threads in now, if anything lets them: even on a busy two-core machine
        _counter.store(value + 1, ordering: .sequentiallyConsistent)
        _inside.subtract(1, ordering: .sequentiallyConsistent)
    }

    /// Increments that happened.
    var count: Int { _counter.load(ordering: .sequentiallyConsistent) }
    /// The most bodies that were ever inside at once.
    var mostInside: Int { _mostInside.load(ordering: .sequentiallyConsistent) }

    /// Runs `threads` × `iterations` bodies through `accessor` on real threads.
    static func stress(
        threads: Int = 4, iterations: Int = 5_000, _ accessor: @escaping @Sendable (@escaping () -> Void) -> Void
    ) async -> ExclusionProbe {
        let probe = ExclusionProbe()
        await onThreads(threads, rounds: iterations) { _, _ in
            accessor { probe.body() }
        }
        return probe
    }
}

extension Atomic where Value == Int {
    func raise(toAtLeast value: Int) {
        var current = load(ordering: .relaxed)
        while value > current {
            let (exchanged, original) = compareExchange(
                expected: current, desired: value, ordering: .sequentiallyConsistent)
            if exchanged { return }
            current = original
        }
    }
}
