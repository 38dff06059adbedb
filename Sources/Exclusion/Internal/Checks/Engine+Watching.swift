import Dispatch
import ExclusionShims
import Synchronization

// MARK: - Watching blocking waits

extension _Engine {
    /// Notes where a watched access entered, in the instance's room for it
    /// (`exclusion_entry_room`), with the state held.
    @usableFromInline
    func _noteEntry(file: StaticString, line: UInt) {
        let length = UInt64(truncatingIfNeeded: file.utf8CodeUnitCount)
        exclusion_entry_note(
            _entry, UInt(bitPattern: file.utf8Start), length << 32 | UInt64(min(line, UInt(UInt32.max))))
    }

    /// Where the access holding this instance (or the last one that held it) entered, as far as
    /// the watched accesses noted it.
    private var _lastEntry: String {
        guard let start = UnsafePointer<UInt8>(bitPattern: exclusion_entry_file(_entry)) else {
            return "a place no watched access noted (asynchronous work, or an access that doesn't wait)"
        }
        let lengthAndLine = exclusion_entry_length_and_line(_entry)
        let file = String(
            decoding: UnsafeBufferPointer(start: start, count: Int(lengthAndLine >> 32)), as: UTF8.self)
        return "\(file):\(lengthAndLine & 0xFFFF_FFFF)"
    }

    /// Starts watching a blocking wait on this instance that begins now, at `site`: it is reported
    /// once if it lasts past the stuck-wait threshold. End it when the wait ends.
    func _watchWait(waitingFor what: String, at site: _Site) -> _WatchedWait {
        let held = _held  // until the report is made, which may outlast the wait
        return _WatchedWait { held.engine._reportStuck(waitingFor: what, at: site) }
    }

    func _reportStuck(waitingFor what: String, at site: _Site) {
        let (file, line) = (site.file ?? "an unknown place", site.line)
        _StuckWait.report(
            """
            Exclusion: a thread has waited \(_StuckWait.threshold!) at \(file):\(line) \(what) \(_typeName) \
            "\(label)". The access holding it, or the last one that held it, entered at \(_lastEntry). A wait \
            that never ends is a deadlock, or a condition that nothing will make true. \
            EXCLUSION_STUCK_WAIT_SECONDS sets how long a wait may last before this report (0 turns it off).
            """)
    }
}
