import Foundation

extension Simulation {
    /// What a simulation did, and whether the bank came out of it consistent.
    public struct Report: Sendable, Codable, Equatable {
        /// One check of the bank after the run.
        public struct Check: Sendable, Codable, Equatable {
            public let name: String
            public let passed: Bool
            public let detail: String
        }

        public let configuration: Configuration
        public let operations: Int
        /// From the first operation until the last change was delivered (as a notification, or
        /// from ``Bank/changes``: see ``Simulation/Configuration/countThrough``).
        public let seconds: Double
        /// Operations per second, end to end: counted until the last change was delivered.
        public let operationsPerSecond: Double
        /// How many operations of each kind the threads made, by ``Simulation/Operation`` name.
        public let counts: [String: Int]
        /// How many the bank refused, by ``BankError/reason``.
        public let rejections: [String: Int]
        /// What share of all operations the bank refused, by ``BankError/reason``: a fraction, 0 to 1.
        public let rejectionShares: [String: Double]
        /// Accounts opened during the run, after the ``Simulation/Configuration/accounts`` opened
        /// before it.
        public let accountsOpened: Int
        /// Accounts closed during the run.
        public let accountsClosed: Int
        /// Accounts open when the run ended.
        public let openAccounts: Int
        /// At least this many accounts were open at every moment of the run, and at most
        /// ``mostOpenAccounts``: each thread's fewest and most, added up.
        public let fewestOpenAccounts: Int
        public let mostOpenAccounts: Int
        /// How many changes were delivered, where they were counted.
        public let notificationsDelivered: Int
        /// The balances of the accounts opened before the run.
        public let openingTotal: Money
        /// The balances the accounts opened during the run were opened with.
        public let newAccountsTotal: Money
        public let deposits: Money
        public let withdrawals: Money
        public let payouts: Money
        public let finalTotal: Money
        public let checks: [Check]

        /// Whether every check held.
        public var passed: Bool { checks.allSatisfy(\.passed) }

        init(
            configuration: Configuration, bank: Bank, accounts: [Account], openingTotal: Money, tally: Tally,
            notifications: Int, expectedNotifications: Int, changesProblem: String? = nil, totalsDelivered: Int,
            elapsed: Duration
        ) {
            self.configuration = configuration
            operations = configuration.operations
            let components = elapsed.components
            seconds = Double(components.seconds) + Double(components.attoseconds) / 1e18
            operationsPerSecond = seconds > 0 ? Double(configuration.operations) / seconds : 0
            counts = Dictionary(uniqueKeysWithValues: tally.counts.map { ($0.key.rawValue, $0.value) })
            rejections = tally.rejections
            let operations = configuration.operations
            rejectionShares = tally.rejections.mapValues { operations > 0 ? Double($0) / Double(operations) : 0 }
            accountsOpened = tally.opened
            accountsClosed = tally.closed
            openAccounts = tally.openAtEnd
            fewestOpenAccounts = tally.fewestOpen
            mostOpenAccounts = tally.mostOpen
            notificationsDelivered = notifications
            self.openingTotal = openingTotal
            newAccountsTotal = Money(minorUnits: tally.openedWith)
            deposits = Money(minorUnits: tally.deposits)
            withdrawals = Money(minorUnits: tally.withdrawals)
            payouts = Money(minorUnits: tally.payouts)
            finalTotal = bank.totalBalanceInAllAccounts

            let expectedTotal = Money(
                minorUnits: openingTotal.minorUnits + tally.openedWith + tally.deposits - tally.withdrawals
                    - tally.payouts)
            let balances = accounts.map(\.balance)
            let sumOfBalances = Money(minorUnits: balances.reduce(0) { $0 + $1.minorUnits })
            let negative = balances.filter { $0 < .zero }.count + tally.negativeBalancesSeen
            let openInTheBank = accounts.filter { !$0.isClosed }.count
            checks = [
                Check(
                    name: "money is conserved", passed: finalTotal == expectedTotal,
                    detail: "opening \(openingTotal) + new accounts \(newAccountsTotal) + deposits \(deposits) "
                        + "− withdrawals \(withdrawals) − payouts \(payouts) = \(expectedTotal); "
                        + "the bank's total is \(finalTotal)"),
                Check(
                    name: "every opening and closing took effect",
                    passed: accounts.count == configuration.accounts + tally.opened && openInTheBank == tally.openAtEnd,
                    detail:
                        "\(configuration.accounts) + \(tally.opened) opened = \(accounts.count) accounts in the bank; "
                        + "\(tally.openAtEnd) left open, \(openInTheBank) open in the bank"),
                Check(
                    name: "the open accounts add up",
                    passed: tally.fewestOpen <= min(configuration.accounts, tally.openAtEnd)
                        && max(configuration.accounts, tally.openAtEnd) <= tally.mostOpen
                        && tally.opened - tally.closed == tally.openAtEnd - configuration.accounts,
                    detail:
                        "\(configuration.accounts) open at the start + \(tally.opened) opened − \(tally.closed) closed "
                        + "= \(tally.openAtEnd) open at the end, never fewer than \(tally.fewestOpen) nor more than "
                        + "\(tally.mostOpen)"),
                Check(
                    name: "the total is the sum of the balances", passed: sumOfBalances == finalTotal,
                    detail: "sum of \(balances.count) balances \(sumOfBalances), running total \(finalTotal)"),
                Check(
                    name: "no balance is negative", passed: negative == 0,
                    detail: "\(negative) negative balances seen"),
                configuration.countThrough == .notifications
                    ? Check(
                        name: "one notification per change", passed: notifications == expectedNotifications,
                        detail: "\(expectedNotifications) changes committed, \(notifications) notifications delivered")
                    : Check(
                        name: "every change given once, in order", passed: changesProblem == nil,
                        detail: changesProblem
                            ?? "\(expectedNotifications) changes committed and taken from `changes`; every account's "
                            + "changes chain from its opening to its balance"),
                Check(
                    name: "every asynchronous total delivered",
                    passed: totalsDelivered == tally.asyncTotalsRequested,
                    detail: "\(tally.asyncTotalsRequested) requested, \(totalsDelivered) delivered"),
            ]
        }

        /// The report as text for people.
        public var summary: String {
            var lines: [String] = []
            lines.append(
                "Simulated \(operations) operations on \(configuration.accounts) accounts with "
                    + "\(configuration.threads) threads (\(configuration.concurrency.rawValue) ledger, "
                    + "\(configuration.notifications.rawValue) notifications, seed \(configuration.seed)) in \(String(format: "%.2f", seconds)) s, until the last "
                    + (configuration.countThrough == .notifications
                        ? "notification was delivered" : "change was taken from `changes`")
                    + ": \(Int(operationsPerSecond.rounded())) operations per second.")
            lines.append("")
            lines.append("Operations:")
            for operation in Simulation.Operation.allCases {
                lines.append(
                    "  \(operation.rawValue.padding(toLength: 12, withPad: " ", startingAt: 0)) \(counts[operation.rawValue] ?? 0)"
                )
            }
            lines.append(
                "Accounts: \(configuration.accounts) open at the start, \(openAccounts) at the end; "
                    + "\(accountsOpened) opened and \(accountsClosed) closed during the run, "
                    + "never fewer than \(fewestOpenAccounts) nor more than \(mostOpenAccounts) open.")
            lines.append("Rejected:")
            if rejections.isEmpty { lines.append("  none") }
            for (reason, count) in rejections.sorted(by: { $0.key < $1.key }) {
                let share = String(format: "%.2f", (rejectionShares[reason] ?? 0) * 100)
                lines.append(
                    "  \(reason.padding(toLength: 18, withPad: " ", startingAt: 0)) \(count) (\(share) % of operations)"
                )
            }
            lines.append(
                configuration.countThrough == .notifications
                    ? "Notifications delivered: \(notificationsDelivered)"
                    : "Changes taken from `changes`: \(notificationsDelivered)")
            lines.append("")
            lines.append("Checks:")
            for check in checks {
                lines.append("  [\(check.passed ? "ok" : "FAILED")] \(check.name): \(check.detail)")
            }
            lines.append(passed ? "All checks passed." : "Some checks FAILED.")
            return lines.joined(separator: "\n")
        }

        /// The report as JSON, with stable key order.
        public var json: String {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            var text = String(decoding: try! encoder.encode(JSONForm(self)), as: UTF8.self)
            text.append("\n")
            return text
        }
    }
}

/// The report with `passed` spelled out, for JSON readers.
private struct JSONForm: Encodable {
    let report: Simulation.Report
    init(_ report: Simulation.Report) { self.report = report }

    enum CodingKeys: String, CodingKey { case passed }

    func encode(to encoder: any Encoder) throws {
        try report.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(report.passed, forKey: .passed)
    }
}
