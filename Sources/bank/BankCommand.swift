import ArgumentParser
import Banking
import Foundation
import ToolSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

@main
struct BankCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bank",
        abstract: "Exercise a thread-safe Bank.",
        subcommands: [Simulate.self],
        defaultSubcommand: Simulate.self
    )

    static func main() async { await runAsTool() }
}

extension Simulation.ConcurrencyChoice: ExpressibleByArgument {}
extension Bank.ChangeNotifications: ExpressibleByArgument {}
extension Simulation.Counting: ExpressibleByArgument {}

struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run random operations on many threads, then check that no money appeared or vanished.",
        discussion: """
            Each thread is a branch with accounts of its own: it transfers, takes deposits and \
            withdrawals, reads balances and the bank's total, and opens and closes accounts, keeping \
            about its share of --accounts open. The same options give the same report, but for its \
            timing. Exits 0 when every check holds, 1 when one fails, 64 for bad arguments.
            """
    )

    @Option(help: "Accounts to open before the threads start; about as many stay open through the run.")
    var accounts = 1_000

    @Option(help: "Threads making operations at once, each a branch with its share of the accounts.")
    var threads = 4

    @Option(help: "Operations in all, shared out between the threads.")
    var operations = 200_000

    @Option(help: "How the bank shares its ledger: serial or readers-writer.")
    var concurrency = Simulation.ConcurrencyChoice.serial

    @Option(help: "How the bank announces changes: each-change (one notification per change) or batched.")
    var notifications = Bank.ChangeNotifications.eachChange

    @Option(
        help: ArgumentHelp(
            "Where to count the changes: notifications, or changes (a loop over Bank.changes, which also checks their order).",
            valueName: "notifications|changes"))
    var countThrough = Simulation.Counting.notifications

    @Option(help: "Seed for the random choices.")
    var seed: UInt64 = 42

    @Flag(help: "Print the report as JSON.")
    var json = false

    @OptionGroup var contentionProfile: ContentionProfileOption

    func validate() throws {
        guard (1...10_000_000).contains(accounts) else {
            throw ValidationError("--accounts must be between 1 and 10000000, not \(accounts).")
        }
        guard (1...256).contains(threads) else {
            throw ValidationError("--threads must be between 1 and 256, not \(threads).")
        }
        guard accounts >= 2 * threads else {
            throw ValidationError(
                "--accounts must be at least twice --threads (each thread transfers between accounts of its own), "
                    + "not \(accounts) for \(threads) threads.")
        }
        guard (0...1_000_000_000).contains(operations) else {
            throw ValidationError("--operations must be between 0 and 1000000000, not \(operations).")
        }
    }

    func run() async throws {
        let simulation = Simulation(
            configuration: .init(
                accounts: accounts, threads: threads, operations: operations, concurrency: concurrency,
                notifications: notifications, countThrough: countThrough, seed: seed))
        let progress = ProgressDisplay(onTerminal: isatty(STDERR_FILENO) == 1)
        let profile = contentionProfile.start()
        let report = await simulation.run(notificationQueue: .main) { done, total in progress.show(done, of: total) }
        progress.finish()
        try contentionProfile.finish(profile)
        try StandardStreams.output(json ? report.json : report.summary + "\n")
        if !report.passed { throw ExitCode.failure }
    }
}

/// Progress on standard error: a bar redrawn in place on a terminal, a plain line every second
/// otherwise (so logs stay readable). Progress that can't be written is given up on.
final class ProgressDisplay: @unchecked Sendable {
    // @unchecked: `lastPlainLine` and `showsProgress` are only touched from `show` and `finish`.
    // `Simulation.run` makes one progress call at a time and none after it returns, and `finish`
    // is called after it returns.
    private let onTerminal: Bool
    private var lastPlainLine = ContinuousClock.now

    init(onTerminal: Bool) {
        self.onTerminal = onTerminal
    }

    func show(_ done: Int, of total: Int) {
        let fraction = total == 0 ? 1 : Double(done) / Double(total)
        if onTerminal {
            let width = 40
            let filled = Int((fraction * Double(width)).rounded(.down))
            let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
            write("\r[\(bar)] \(Int((fraction * 100).rounded(.down)))% \(done)/\(total)")
        } else if ContinuousClock.now - lastPlainLine >= .seconds(1) || done == total {
            lastPlainLine = ContinuousClock.now
            write("progress: \(done)/\(total) operations (\(Int((fraction * 100).rounded(.down)))%)\n")
        }
    }

    func finish() {
        if onTerminal { write("\n") }
    }

    private var showsProgress = true

    private func write(_ text: String) {
        if showsProgress { showsProgress = StandardStreams.error(text) }
    }
}
