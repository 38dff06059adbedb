@_spi(ScheduleExploration) import Exclusion
import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Keeps a trap in an explored thread (a failed precondition, a force unwrap of nil, an index out
/// of range, `fatalError`) from ending the process: the thread stands in the signal handler for
/// good, the execution it belongs to ends with a failure of kind `crashed`, and everything else
/// goes on. A trap on any other thread is the process's own: the handler that was there before
/// gets it, as if this one had never been installed.
///
/// Installed while at least one exploration runs (they count themselves in and out), for the
/// signals a trap raises: `SIGILL` and `SIGTRAP` (Swift's traps, on x86 and Arm), `SIGABRT`
/// (`abort()`, which the runtime calls for some errors), `SIGSEGV`, `SIGBUS` and `SIGFPE`.
///
/// What it can't contain: a stack overflow, whose handler would need a stack of its own, and a
/// trap that a debugger or a crash reporter catches first.
enum TrapContainment {
    private static let signals: [Int32] = [SIGILL, SIGTRAP, SIGABRT, SIGSEGV, SIGBUS, SIGFPE]
    private static let lock = NSLock()
    // Touched under `lock` only, but for `previous`, which the handler reads: written before the
    // handlers are installed and after they are removed.
    nonisolated(unsafe) private static var users = 0
    /// Where Swift's runtime keeps the messages of the fatal errors it reported, one after the
    /// other (`swift_getFatalErrorMessageBuffer`, an atomic pointer to a C string, on platforms
    /// without Apple's crash reporter); nil where there is none. Unsafe only as a raw pointer is
    /// not `Sendable`: it never changes, and `begin` makes it before installing the handlers, which
    /// then read it with no lock (an initialized `static let` is one load and one comparison).
    nonisolated(unsafe) static let fatalErrorMessages: UnsafeRawPointer? = fatalErrorMessageBuffer()
    /// The actions in place before, by signal number: what a trap elsewhere gets.
    nonisolated(unsafe) private static let previous: UnsafeMutablePointer<sigaction> = {
        let actions = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)
        actions.initialize(repeating: sigaction(), count: 65)
        return actions
    }()

    /// An exploration begins: traps in explored threads are contained until the last one ends.
    static func begin() {
        lock.withLock {
            users += 1
            guard users == 1 else { return }
            _ = fatalErrorMessages
            for signal in signals {
                var action = sigaction()
                #if canImport(Darwin)
                action.__sigaction_u.__sa_handler = trapped
                #else
                action.__sigaction_handler.sa_handler = trapped
                #endif
                sigemptyset(&action.sa_mask)
                // Can't fail: the signals are valid and catchable, and the action is well formed.
                _ = sigaction(signal, &action, previous + Int(signal))
            }
        }
    }

    /// An exploration ended.
    static func end() {
        lock.withLock {
            users -= 1
            guard users == 0 else { return }
            for signal in signals { _ = sigaction(signal, previous + Int(signal), nil) }
        }
    }

    /// The handler. An explored thread tells its execution and stands here for good; any other
    /// thread's trap gets the action that was there before: it is put back, and the trapping
    /// instruction, run again when this returns, traps again. (`abort()` raises again too.)
    ///
    /// It does only what a signal handler may: it reads the thread's record, calls
    /// `controller.trapped`, which copies bytes and stores atomics, and sleeps.
    private static let trapped: @convention(c) (Int32) -> Void = { signal in
        if let controller = ScheduleSeam.currentController {
            controller.trapped(signal: signal)
            while true { _ = sleep(3_600) }
        }
        _ = sigaction(signal, TrapContainment.previous + Int(signal), nil)
    }

    /// The runtime's latest fatal-error messages as they stand now: the address of their text,
    /// which changes with every message reported. Plain loads, safe in a signal handler: the
    /// thread that traps stored the last message itself, before it trapped.
    static var currentFatalErrorMessages: UnsafePointer<CChar>? {
        fatalErrorMessages?.load(as: UnsafePointer<CChar>?.self)
    }

    /// Whether Swift's runtime keeps the messages of its fatal errors where a trap's handler can
    /// read them: not on Apple's platforms, whose crash reporter takes them instead.
    static var runtimeKeepsFatalErrorMessages: Bool { fatalErrorMessages != nil }

    /// Looks up `swift_getFatalErrorMessageBuffer` and calls it: the buffer's address, which
    /// doesn't change. Not in a signal handler: `dlopen` may allocate.
    private static func fatalErrorMessageBuffer() -> UnsafeRawPointer? {
        guard let handle = dlopen(nil, RTLD_NOW) else { return nil }
        defer { dlclose(handle) }
        guard let symbol = dlsym(handle, "swift_getFatalErrorMessageBuffer") else { return nil }
        typealias Getter = @convention(c) () -> UnsafeRawPointer?
        return unsafeBitCast(symbol, to: Getter.self)()
    }

    /// A signal's name, as the report gives it.
    static func name(of signal: Int32) -> String {
        switch signal {
        case SIGILL: "SIGILL"
        case SIGTRAP: "SIGTRAP"
        case SIGABRT: "SIGABRT"
        case SIGSEGV: "SIGSEGV"
        case SIGBUS: "SIGBUS"
        case SIGFPE: "SIGFPE"
        default: "signal \(signal)"
        }
    }
}

/// Runs `body` while everything the process writes to standard error goes through a pipe of this
/// one's, and on to standard error as before; returns what `body` returned and what was written
/// meanwhile. One capture at a time, process-wide: standard error is the process's.
///
/// For the message the runtime writes before a trap (`Fatal error: …`), which no API returns: the
/// crashing schedule runs again under a capture once it has trapped once.
func capturingStandardError<R>(_ body: () -> R) -> (R, String) {
    StandardErrorCapture.lock.lock()
    defer { StandardErrorCapture.lock.unlock() }
    var ends: [Int32] = [0, 0]
    let original = dup(2)
    guard original >= 0, pipe(&ends) == 0 else { return (body(), "") }
    let (reading, writing) = (ends[0], ends[1])
    let captured = StandardErrorCapture()
    let forwarder = Thread {
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let count = read(reading, &buffer, buffer.count)
            guard count > 0 else { break }
            buffer.withUnsafeBytes { bytes in _ = write(original, bytes.baseAddress, count) }
            captured.append(buffer[..<count])
        }
        close(reading)
        captured.finished.signal()
    }
    forwarder.start()
    _ = dup2(writing, 2)
    close(writing)
    let result = body()
    // Standard error is the original again; the pipe ends once nothing else holds it (a child
    // process started meanwhile may, for as long as it runs: then this waits a little, and
    // returns what came so far).
    _ = dup2(original, 2)
    close(original)
    _ = captured.finished.wait(timeout: .now() + 2)
    return (result, captured.text)
}

/// What a capture collected.
private final class StandardErrorCapture: @unchecked Sendable {
    // @unchecked: `bytes` is only touched while `bytesLock` is held; `lock` is the one capture's.
    static let lock = NSLock()
    private let bytesLock = NSLock()
    private var bytes: [UInt8] = []
    let finished = DispatchSemaphore(value: 0)

    func append(_ more: ArraySlice<UInt8>) { bytesLock.withLock { bytes += more } }
    var text: String { bytesLock.withLock { String(decoding: bytes, as: UTF8.self) } }
}
