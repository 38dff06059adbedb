import Synchronization

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Lock-order deadlock detection: stops the process the first time two instances are nested in
/// both orders, before any thread deadlocks on them.
///
/// A thread that holds A and waits for B, while another holds B and waits for A, waits forever.
/// Re-entrancy checks can't see it: each thread only ever asks for an instance it doesn't hold.
/// So, as Abseil's `Mutex` does, every nesting is recorded as an edge *held → wanted* of one
/// graph shared by all threads, with where it was first seen. An edge that would close a cycle
/// means some threads take these instances in opposite orders; if two of them did it at the same
/// moment they would deadlock. The check stops the process then, from a single run, even if this
/// run was lucky.
///
/// It costs nothing for an access that holds nothing else (a depth already loaded for the
/// re-entrancy check is compared with zero); a nested access in a debug build takes the graph's
/// lock and looks up one edge per held instance. It is on in debug builds unless the environment
/// sets `EXCLUSION_LOCK_ORDER=0`, and off in release builds unless it sets `EXCLUSION_LOCK_ORDER=1`.
@usableFromInline
enum _LockOrder {
    /// Whether nestings are recorded and checked; decided once per process.
    @usableFromInline
    static let isEnabled: Bool = {
        let setting = getenv("EXCLUSION_LOCK_ORDER").map { String(cString: $0) }
        #if DEBUG
        return setting != "0"
        #else
        return setting == "1"
        #endif
    }()

    /// Whether the graph has any instance in it, so that `deinit` can skip it when it hasn't.
    static let hasInstances = Atomic<Bool>(false)

    private static let graph = Graph()

    /// Call before `thread` blocks for the instance at `wanted`, named `name`, while it is inside
    /// other instances.
    static func willAcquire(
        _ wanted: UnsafeRawPointer, named name: () -> String, holding thread: _CurrentThread, at site: _Site
    ) {
        guard isEnabled else { return }
        graph.record(wanted, name: name, heldBy: thread, at: { "\(site.file ?? ""):\(site.line)" })
    }

    /// Call when the instance at `instance` goes: its address may be reused, and its edges must not be.
    @usableFromInline
    static func forget(_ instance: UnsafeRawPointer) {
        guard hasInstances.load(ordering: .relaxed) else { return }
        graph.remove(instance)
    }
}

extension _LockOrder {
    /// The nesting graph. One lock guards it; it is only touched by nested accesses and by the
    /// `deinit` of instances that were nested.
    private final class Graph: @unchecked Sendable {
        // @unchecked: `nodes` is only touched while `lock` is held.
        private let lock = _Lock.standalone()
        private var nodes: [UnsafeRawPointer: Node] = [:]

        struct Node {
            var name: String
            /// For each instance taken while this one was held: where that was first seen.
            var successors: [UnsafeRawPointer: String] = [:]
            var predecessors: Set<UnsafeRawPointer> = []
        }

        func record(
            _ wanted: UnsafeRawPointer, name: () -> String, heldBy thread: _CurrentThread, at location: () -> String
        ) {
            lock.lock()
            defer { lock.unlock() }
            // Known nestings, the common case, cost one lookup per held instance and allocate nothing.
            for level in 0..<thread.depth {
                guard let holder = thread.held(at: level), holder != wanted,
                    nodes[holder]?.successors[wanted] == nil
                else { continue }
                if let cycle = path(from: wanted, to: holder) {
                    fatalError(
                        inversionMessage(holder: holder, wanted: wanted, wantedName: name(), at: location(), cycle))
                }
                add(holder, name: Self.name(ofHeld: holder))
                add(wanted, name: name())
                nodes[holder]!.successors[wanted] = location()
                nodes[wanted]!.predecessors.insert(holder)
            }
        }

        func remove(_ instance: UnsafeRawPointer) {
            lock.lock()
            defer { lock.unlock() }
            guard let node = nodes.removeValue(forKey: instance) else { return }
            for predecessor in node.predecessors { nodes[predecessor]?.successors[instance] = nil }
            for successor in node.successors.keys { nodes[successor]?.predecessors.remove(instance) }
        }

        private func add(_ instance: UnsafeRawPointer, name: @autoclosure () -> String) {
            guard nodes[instance] == nil else { return }
            nodes[instance] = Node(name: name())
            _LockOrder.hasInstances.store(true, ordering: .relaxed)
        }

        /// A held instance is alive (this thread is inside it), and only `Exclusive` and
        /// `ReadersWriter` are ever entered, so it can be asked for its name.
        private static func name(ofHeld instance: UnsafeRawPointer) -> String {
            let object = Unmanaged<AnyObject>.fromOpaque(instance).takeUnretainedValue()
            return (object as? any _EngineInstance)?._lockOrderName ?? "an instance at \(instance)"
        }

        /// The instances from `start` to `end` along recorded nestings, both included, if any.
        private func path(
            from start: UnsafeRawPointer, to end: UnsafeRawPointer
        )
            -> [UnsafeRawPointer]?
        {
            var cameFrom: [UnsafeRawPointer: UnsafeRawPointer] = [:]
            var frontier = [start]
            while let current = frontier.popLast() {
                if current == end {
                    var path = [end]
                    while let previous = cameFrom[path.last!] { path.append(previous) }
                    return path.reversed()
                }
                guard let successors = nodes[current]?.successors else { continue }
                for next in successors.keys where next != start && cameFrom[next] == nil {
                    cameFrom[next] = current
                    frontier.append(next)
                }
            }
            return nil
        }

        private func inversionMessage(
            holder: UnsafeRawPointer, wanted: UnsafeRawPointer, wantedName: String, at location: String,
            _ cycle: [UnsafeRawPointer]
        ) -> String {
            let holderName = nodes[holder]?.name ?? Self.name(ofHeld: holder)
            var earlier: [String] = []
            for (outer, inner) in zip(cycle, cycle.dropFirst()) {
                let outerName = nodes[outer]?.name ?? "?"
                let innerName = nodes[inner]?.name ?? "?"
                let seen = nodes[outer]?.successors[inner] ?? "?"
                earlier.append("  \(innerName) was taken while holding \(outerName), first seen at \(seen)")
            }
            return """
                Exclusion: lock-order inversion between \(holderName) and \(wantedName), which can deadlock.
                  Now: this thread holds \(holderName) and is taking \(wantedName), at \(location).
                  Before, in the opposite order:
                \(earlier.joined(separator: "\n"))
                Two threads taking them in these orders at the same moment would each wait for the other \
                forever. Fix: take them in one order everywhere, or don't hold one while taking the other \
                (copy what you need out of the first access, then access the second). To turn this check \
                off, set EXCLUSION_LOCK_ORDER=0.
                """
        }
    }
}
