import Dispatch
import Exclusion

/// The bank's one member queue: the ledger behind an `Exclusive` or a `ReadersWriter`.
///
/// Both hold the same `Ledger` and give the same results; the readers-writer store lets reads
/// (balances, flags, the total) run side by side while changes run alone.
enum LedgerStore: Sendable {
    case serial(Exclusive<Ledger>)
    case readersWriter(ReadersWriter<Ledger>)

    init(_ concurrency: Bank.Concurrency) {
        switch concurrency {
        case .serial: self = .serial(Exclusive(Ledger(), label: "bank ledger"))
        case .readersWriter: self = .readersWriter(ReadersWriter(Ledger(), label: "bank ledger"))
        }
    }

    /// Reads the ledger: shared with other reads in the readers-writer store. `file` and `line`
    /// are the caller's, passed on so that a contention profile names the bank's call sites.
    func read<R: Sendable>(_ body: (Ledger) -> R, file: StaticString = #fileID, line: UInt = #line) -> R {
        switch self {
        case .serial(let ledger): ledger.access({ body($0) }, file: file, line: line)
        case .readersWriter(let ledger): ledger.read(body, file: file, line: line)
        }
    }

    /// Changes the ledger, alone.
    func change<R: Sendable, E: Error>(
        _ body: (inout Ledger) throws(E) -> R, file: StaticString = #fileID, line: UInt = #line
    ) throws(E) -> R {
        switch self {
        case .serial(let ledger):
            try ledger.access({ (state) throws(E) -> R in try body(&state) }, file: file, line: line)
        case .readersWriter(let ledger): try ledger.write(body, file: file, line: line)
        }
    }

    /// Reads the ledger later and delivers the result on `queue`.
    func readAsync<R: Sendable>(
        deliverOn queue: DispatchQueue, _ body: @escaping @Sendable (Ledger) -> R,
        completion: @escaping @Sendable (R) -> Void
    ) {
        let unwrap: @Sendable (Result<R, any Error>) -> Void = { result in
            // The body can't throw, so the result is always a success.
            if case .success(let value) = result { completion(value) }
        }
        switch self {
        case .serial(let ledger): ledger.accessAsync(deliverOn: queue, { body($0) }, completion: unwrap)
        case .readersWriter(let ledger): ledger.readAsync(deliverOn: queue, body, completion: unwrap)
        }
    }

    /// Reads the ledger, suspending instead of blocking while a change holds it.
    nonisolated(nonsending) func read<R: Sendable>(_ body: @Sendable (Ledger) -> R) async -> R {
        switch self {
        case .serial(let ledger): await ledger.access { body($0) }
        case .readersWriter(let ledger): await ledger.read(body)
        }
    }

    /// Changes the ledger once `condition` holds, suspending instead of blocking meanwhile.
    ///
    /// - Throws: `CancellationError` if the task is cancelled while it waits.
    nonisolated(nonsending) func change<R: Sendable>(
        when condition: @Sendable (Ledger) -> Bool, _ body: @Sendable (inout Ledger) -> R
    ) async throws -> R {
        switch self {
        case .serial(let ledger): try await ledger.access(when: condition) { body(&$0) }
        case .readersWriter(let ledger): try await ledger.write(when: condition, body)
        }
    }
}
