#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A thread's `pthread_t`, which a test may pass between threads and compare.
///
/// On Linux a `pthread_t` is a number, and `Sendable`; on Apple platforms it is a pointer, which
/// isn't: a test that sends one builds on Linux and not on a Mac.
public struct ThreadHandle: Equatable, @unchecked Sendable {
    // @unchecked: the handle only names a thread; it is compared, or given to calls that take it.
    public let thread: pthread_t

    /// The calling thread's.
    public static var current: ThreadHandle { ThreadHandle(thread: pthread_self()) }

    public static func == (lhs: ThreadHandle, rhs: ThreadHandle) -> Bool { pthread_equal(lhs.thread, rhs.thread) != 0 }
}
