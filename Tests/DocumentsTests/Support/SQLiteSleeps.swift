import Foundation
import Synchronization

#if canImport(GRDBSQLite)
import GRDBSQLite
#else
import SQLite3
#endif

/// Whether a chosen thread sleeps in SQLite right now: where SQLite's busy handler waits, between
/// tries, for a lock another connection holds.
///
/// SQLite sleeps through its VFS (`xSleep`), so the connections opened inside ``watching(_:)`` get
/// SQLite's default VFS with a sleep of its own, which notes whether the watched thread is in it.
/// That is the busy handler itself, seen the same way on every platform, where the kernel's view of
/// the thread differs (Linux's `/proc/…/syscall` names a sleep; Mach's `thread_info` says only that
/// the thread waits, for anything), and it needs no hook in the shipped code (the store's GRDB
/// configuration, which could take a busy callback, is made and kept inside it).
enum SQLiteSleeps {
    /// Runs `open` with the watching VFS as SQLite's default, so that the connections it opens sleep
    /// through it; SQLite's own is the default again afterwards, for connections opened later.
    static func watching<R>(_ open: () throws -> R) rethrows -> R {
        register(watchingVFS)
        defer { register(systemVFS) }
        return try open()
    }

    /// Makes the calling thread the one watched.
    static func watchThisThread() {
        watched.set(pthread_self())
    }

    /// Whether the watched thread sleeps in a connection opened inside ``watching(_:)`` right now.
    static var watchedThreadSleeps: Bool { watchedThreadIsSleeping.load(ordering: .sequentiallyConsistent) }

    private static func register(_ vfs: UnsafeMutablePointer<sqlite3_vfs>) {
        // Registering a VFS again moves it, as the default here, to the head of SQLite's list.
        let result = sqlite3_vfs_register(vfs, 1)
        precondition(result == SQLITE_OK, "sqlite3_vfs_register failed: \(result)")
    }
}

/// SQLite's own default VFS, looked up before the watching one is made from it.
// nonisolated(unsafe): set once, when first used; SQLite only reads what it points to.
private nonisolated(unsafe) let systemVFS: UnsafeMutablePointer<sqlite3_vfs> = sqlite3_vfs_find(nil)

/// A copy of SQLite's default VFS under a name of its own, but for its sleep, which notes whether
/// the watched thread sleeps and then sleeps as SQLite's own does.
// nonisolated(unsafe): set once, when first used, and never freed: SQLite keeps the pointer, and
// connections opened with it use it until they close. SQLite only reads it.
private nonisolated(unsafe) let watchingVFS: UnsafeMutablePointer<sqlite3_vfs> = {
    let vfs = UnsafeMutablePointer<sqlite3_vfs>.allocate(capacity: 1)
    vfs.initialize(to: systemVFS.pointee)
    vfs.pointee.zName = UnsafePointer(strdup("exclusion-tests-watching-sleeps"))
    vfs.pointee.xSleep = { _, microseconds in
        let isWatched = watched.isCurrent
        if isWatched { watchedThreadIsSleeping.store(true, ordering: .sequentiallyConsistent) }
        defer { if isWatched { watchedThreadIsSleeping.store(false, ordering: .sequentiallyConsistent) } }
        return systemVFS.pointee.xSleep!(systemVFS, microseconds)
    }
    return vfs
}()

private let watched = WatchedThread()
private let watchedThreadIsSleeping = Atomic<Bool>(false)

/// The thread whose sleeps are watched.
private final class WatchedThread: @unchecked Sendable {
    // @unchecked: _thread is only touched while _lock is held.
    private let _lock = NSLock()
    private var _thread: pthread_t?

    func set(_ thread: pthread_t) { _lock.withLock { _thread = thread } }

    /// Whether the calling thread is the watched one.
    var isCurrent: Bool { _lock.withLock { _thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false } }
}
