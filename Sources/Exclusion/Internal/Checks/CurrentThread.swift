import ExclusionShims

// MARK: - The thread's record

/// The calling thread as Exclusion tracks it: which instances it is inside right now.
///
/// This is what turns a re-entrant access, which would deadlock or corrupt state, into a clear
/// stop. It is plain thread-local memory, so asking costs a few instructions.
@usableFromInline
struct _CurrentThread {
    /// How a thread is inside an instance.
    @usableFromInline
    enum Mode: Int32 {
        case exclusive = 0
        case shared = 1
    }

    @usableFromInline let _record: UnsafeMutablePointer<exclusion_thread_record>

    @inlinable @inline(__always)
    init() {
        _record = exclusion_current_thread()
    }

    /// How this thread is inside an access of the instance at `instance`, or nil if it is not.
    @inlinable @inline(__always)
    func mode(in instance: UnsafeRawPointer) -> Mode? {
        let held = exclusion_thread_holds(_record, instance)
        return held == 0 ? nil : Mode(rawValue: held - 1)
    }

    /// Call right after this thread gained access to the instance at `instance`.
    @inlinable @inline(__always)
    func enter(_ instance: UnsafeRawPointer, _ mode: Mode) {
        exclusion_thread_enter(_record, instance, mode.rawValue)
    }

    /// Call right before this thread gives up the access it entered last.
    @inlinable @inline(__always)
    func leave() {
        exclusion_thread_leave(_record)
    }

    /// Whether this thread is inside any instance at all.
    @inlinable @inline(__always)
    var isInsideAny: Bool { _record.pointee.depth > 0 }

    /// How many instances this thread is inside.
    var depth: UInt32 { _record.pointee.depth }

    /// The instance this thread entered at `level`, 0 being the outermost; nil past the tracked depth.
    func held(at level: UInt32) -> UnsafeRawPointer? { exclusion_thread_held_at(_record, level) }

    /// A number that tells this thread apart from every other thread alive.
    @inlinable var index: UInt32 { _record.pointee.index }
}
