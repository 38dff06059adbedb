import Dispatch
import SplitMix

extension Simulation {
    /// One thread of a simulation: a branch of the bank, with accounts of its own.
    ///
    /// Each operation, in order:
    /// 1. picks its kind by ``Operation/weight``; an opening or closing is one or the other by how
    ///    many accounts the branch has open (`opensRatherThanCloses`);
    /// 2. picks the accounts it names among the branch's open ones, but now and then one the branch
    ///    closed lately (`closedAccountChance`), as a customer would;
    /// 3. draws an amount, and asks the bank; a refusal is counted by its reason.
    ///
    /// The branch touches no other branch's accounts, so what each operation does follows from the
    /// seed alone, whatever the other threads do meanwhile.
    struct Branch: Sendable {
        private let bank: Bank
        private var random: SplitMix64
        /// How many accounts the branch keeps open, about: those it was given.
        private let target: Int
        /// The branch's open accounts, in no particular order.
        private var open: [Account]
        /// The accounts it closed last, at most `recentlyClosedLimit`, oldest overwritten first.
        private var recentlyClosed: [Account] = []
        private(set) var tally = Tally()

        /// How often an operation names an account the branch closed lately: one in so many.
        static let closedAccountChance = 1_000
        /// How many closed accounts a branch remembers, to be named by mistake.
        static let recentlyClosedLimit = 16
        /// Amounts of deposits, withdrawals and transfers, in cents: up to 500.00.
        static let amounts: ClosedRange<Int64> = 1...50_000
        /// Balances accounts are opened with, in cents: up to 10,000.00. Small enough that no
        /// change in any run can overflow.
        static let openingBalances: ClosedRange<Int64> = 0...1_000_000

        init(bank: Bank, accounts: [Account], seed: UInt64) {
            self.bank = bank
            random = SplitMix64(seed: seed)
            target = accounts.count
            open = accounts
            tally.fewestOpen = accounts.count
            tally.mostOpen = accounts.count
        }

        /// Makes `operations` operations, adding them to `done` as it goes.
        mutating func work(operations: Int, done: SharedCount, totalsDelivered: SharedCount, queue: DispatchQueue) {
            let totalWeight = Operation.allCases.reduce(0) { $0 + $1.weight }
            for step in 0..<operations {
                var pick = Int.random(in: 0..<totalWeight, using: &random)
                var operation = Operation.allCases.first {
                    pick -= $0.weight
                    return pick < 0
                }!
                if operation == .open || operation == .close {
                    operation = opensRatherThanCloses() ? .open : .close
                }
                tally.counts[operation, default: 0] += 1
                do throws(BankError) {
                    try make(operation, totalsDelivered: totalsDelivered, queue: queue)
                } catch {
                    tally.rejections[error.reason, default: 0] += 1
                }
                if step % 256 == 255 { done.add(256) }
            }
            done.add(operations % 256)
            tally.openAtEnd = open.count
        }

        private mutating func make(
            _ operation: Operation, totalsDelivered: SharedCount, queue: DispatchQueue
        ) throws(BankError) {
            switch operation {
            case .transfer:
                let source = namedAccount()
                let destination = namedAccount(besides: source.index)
                try bank.transferMoneyAmount(amount(), from: source.account, to: destination.account)
                tally.changes += 2
            case .deposit:
                let (account, amount) = (namedAccount().account, amount())
                try account.addMoney(amount)
                tally.deposits += amount.minorUnits
                tally.changes += 1
            case .withdrawal:
                let (account, amount) = (namedAccount().account, amount())
                try account.subtractMoney(amount)
                tally.withdrawals += amount.minorUnits
                tally.changes += 1
            case .balance:
                if namedAccount().account.balance < .zero { tally.negativeBalancesSeen += 1 }
            case .asyncTotal:
                tally.asyncTotalsRequested += 1
                bank.totalBalance(deliverOn: queue) { _ in totalsDelivered.add(1) }
            case .open:
                let balance = Money(minorUnits: Int64.random(in: Self.openingBalances, using: &random))
                open.append(try bank.openAccount(initialBalance: balance))
                tally.opened += 1
                tally.openedWith += balance.minorUnits
                tally.changes += 1
                tally.mostOpen = max(tally.mostOpen, open.count)
            case .close:
                let index = Int.random(in: open.indices, using: &random)
                open.swapAt(index, open.count - 1)
                let account = open.removeLast()
                tally.payouts += try account.closeAccount().minorUnits
                tally.closed += 1
                tally.changes += 1
                tally.fewestOpen = min(tally.fewestOpen, open.count)
                if recentlyClosed.count < Self.recentlyClosedLimit {
                    recentlyClosed.append(account)
                } else {
                    recentlyClosed[(tally.closed - 1) % Self.recentlyClosedLimit] = account
                }
            }
        }

        /// Whether the branch's next change of accounts opens one rather than closes one: the more
        /// it has open beyond its target, the likelier a closing, and the fewer, an opening, so the
        /// number of open accounts comes back to the target however far chance takes it. A branch
        /// keeps two, for its transfers.
        private mutating func opensRatherThanCloses() -> Bool {
            open.count <= 2 || Int.random(in: 0..<target + open.count, using: &random) < target
        }

        /// An account a customer names, and its place among the open ones: one of the branch's open
        /// accounts other than the one at `excluded` (the other side of a transfer), or now and then
        /// one it closed lately, which has no place.
        private mutating func namedAccount(besides excluded: Int? = nil) -> (account: Account, index: Int?) {
            if !recentlyClosed.isEmpty, Int.random(in: 0..<Self.closedAccountChance, using: &random) == 0 {
                return (recentlyClosed.randomElement(using: &random)!, nil)
            }
            var index = Int.random(in: 0..<open.count - (excluded == nil ? 0 : 1), using: &random)
            if let excluded, index >= excluded { index += 1 }
            return (open[index], index)
        }

        private mutating func amount() -> Money {
            Money(minorUnits: Int64.random(in: Self.amounts, using: &random))
        }
    }
}
