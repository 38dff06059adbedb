import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reports a synchronous wait that lasts too long, once, on standard error.
///
/// A thread blocked for ten seconds on an instance is almost always a deadlock, or a condition
/// that nothing will make true, and a blocked thread says nothing on its own. So, in debug builds,
/// a blocking access (for the lock or for a condition) that has waited longer than the threshold
/// prints where it waits, on which instance, and where the access holding that instance entered.
/// The threshold is 10 seconds; `EXCLUSION_STUCK_WAIT_SECONDS` sets another (fractions allowed),
/// and `0` turns the report off. Release builds report only when that variable is set.
@usableFromInline
enum _StuckWait {
    /// How long a synchronous wait may last before it is reported; nil when reports are off.
    /// Read once, when the first instance is created.
    static let threshold: Duration? = {
        if let setting = getenv("EXCLUSION_STUCK_WAIT_SECONDS").map({ String(cString: $0) }) {
            guard let seconds = Double(setting), seconds > 0 else { return nil }
            return .seconds(seconds)
        }
        #if DEBUG
        return .seconds(10)
        #else
        return nil
        #endif
    }()

    /// Prints `message` on standard error with one `write`, so that reports from several threads
    /// don't interleave.
    static func report(_ message: String) {
        var line = message
        line.append("\n")
        line.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
    }
}
