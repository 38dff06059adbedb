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
        /// How many changes were delivered, where they were counted.
        public let notificationsDelivered: Int
        public let openingTotal: Money
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
            notificationsDelivered = notifications
            self.openingTotal = openingTotal
            deposits = Money(minorUnits: tally.deposits)
            withdrawals = Money(minorUnits: tally.withdrawals)
            payouts = Money(minorUnits: tally.payouts)
            finalTotal = bank.totalBalanceInAllAccounts

            let expectedTotal = Money(
                minorUnits: openingTotal.minorUnits + tally.deposits - tally.withdrawals - tally.payouts)
            let balances = accounts.map(\.balance)
            let sumOfBalances = Money(minorUnits: balances.reduce(0) { $0 + $1.minorUnits })
            let negative = balances.filter { $0 < .zero }.count + tally.negativeBalancesSeen
            checks = [
                Check(
                    name: "money is conserved", passed: finalTotal == expectedTotal,
                    detail: "opening \(openingTotal) + deposits \(deposits) − withdrawals \(withdrawals) "
                        + "− payouts \(payouts) = \(expectedTotal); the bank's total is \(finalTotal)"),
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
            lines.append("Rejected:")
            if rejections.isEmpty { lines.append("  none") }
            for (reason, count) in rejections.sorted(by: { $0.key < $1.key }) {
                lines.append("  \(reason.padding(toLength: 18, withPad: " ", startingAt: 0)) \(count)")
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
