import Dispatch
import ExclusionTesting

@testable import Banking

/// A bank as plain values, one operation at a time: the specification `Bank` is checked against,
/// both for concurrent histories and for random single-threaded sequences.
///
/// Accounts are named by their position in `bank.accounts`; a position past the end is
/// ``BankOutput/noSuchAccount``, and position `BankModel.foreign` is an account of another bank.
struct BankModel: SequentialModel {
    struct State: Hashable, Sendable {
        var balances: [Int64]
        var closed: [Bool]
    }

    enum Input: Hashable, Sendable, CustomStringConvertible {
        case open(Int64)
        case deposit(Int, Int64)
        case withdraw(Int, Int64)
        case transfer(Int, Int, Int64)
        case balance(Int)
        case close(Int)
        case total

        var description: String {
            switch self {
            case .open(let amount): "open(\(amount))"
            case .deposit(let account, let amount): "deposit(\(amount) into \(account))"
            case .withdraw(let account, let amount): "withdraw(\(amount) from \(account))"
            case .transfer(let source, let destination, let amount):
                "transfer(\(amount) from \(source) to \(destination))"
            case .balance(let account): "balance(\(account))"
            case .close(let account): "close(\(account))"
            case .total: "total"
            }
        }
    }

    /// The account position that stands for an account of another bank.
    static let foreign = -1

    /// The balances of the accounts open before the first operation.
    var openingBalances: [Int64] = [100, 100]

    var initialState: State {
        State(balances: openingBalances, closed: openingBalances.map { _ in false })
    }

    func step(_ state: State, _ input: Input) -> (output: BankOutput, state: State) {
        var next = state
        let output: BankOutput
        do throws(BankError) {
            output = try next.apply(input)
        } catch {
            return (.refused(error), state)  // a refusal changes nothing
        }
        return (output, next)
    }

    /// Makes a `Bank` in the model's initial state.
    func makeBank(_ concurrency: Bank.Concurrency, notifyingOn queue: DispatchQueue) -> Bank {
        let bank = Bank(concurrency: concurrency, notificationQueue: queue)
        for balance in openingBalances { _ = try! bank.openAccount(initialBalance: Money(minorUnits: balance)) }
        return bank
    }

    /// Applies `input` to the real bank and reports what it did in the model's terms.
    static func perform(_ input: Input, on bank: Bank, foreignAccount: Account) -> BankOutput {
        // One read of the accounts for the whole operation: accounts are never removed, so an
        // operation that finds an account missing has its linearization point here.
        let accounts = bank.accounts
        func account(_ position: Int) -> Account? {
            position == foreign ? foreignAccount : position < accounts.count ? accounts[position] : nil
        }
        do throws(BankError) {
            switch input {
            case .open(let amount):
                return .opened(try bank.openAccount(initialBalance: Money(minorUnits: amount)).id.number)
            case .deposit(let position, let amount):
                guard let account = account(position) else { return .noSuchAccount }
                try bank.deposit(Money(minorUnits: amount), into: account)
                return .done
            case .withdraw(let position, let amount):
                guard let account = account(position) else { return .noSuchAccount }
                try bank.withdraw(Money(minorUnits: amount), from: account)
                return .done
            case .transfer(let source, let destination, let amount):
                guard let source = account(source), let destination = account(destination) else {
                    return .noSuchAccount
                }
                try bank.transferMoneyAmount(Money(minorUnits: amount), from: source, to: destination)
                return .done
            case .balance(let position):
                guard let account = account(position) else { return .noSuchAccount }
                return .money(account.balance.minorUnits)
            case .close(let position):
                guard let account = account(position) else { return .noSuchAccount }
                return .money(try bank.close(account).minorUnits)
            case .total:
                return .money(bank.totalBalanceInAllAccounts.minorUnits)
            }
        } catch {
            return .refused(error)
        }
    }
}

extension BankModel {
    /// `perform` with a broken transfer, the bug the scenario and schedule tests must catch: the
    /// money leaves the source in one access and reaches the destination in another, so a total
    /// taken in between misses it. Every other input is performed as `perform` does.
    static func performTransferringInTwoAccesses(_ input: Input, on bank: Bank, foreignAccount: Account) -> BankOutput {
        guard case .transfer(let source, let destination, let amount) = input,
            source >= 0, destination >= 0, source != destination, amount > 0
        else {
            return perform(input, on: bank, foreignAccount: foreignAccount)
        }
        let accounts = bank.accounts
        guard source < accounts.count, destination < accounts.count else { return .noSuchAccount }
        do throws(BankError) {
            try accounts[source].subtractMoney(Money(minorUnits: amount))
            try accounts[destination].addMoney(Money(minorUnits: amount))
            return .done
        } catch {
            return .refused(error)
        }
    }
}

/// What one bank operation came to.
enum BankOutput: Equatable, Sendable {
    case done
    case opened(Int)
    case money(Int64)
    case noSuchAccount
    case refused(BankError)
}

extension Bank {
    // The account's own methods, called through the bank so that the model can check that a
    // foreign account's operations are refused (`Account` methods always reach their own bank).
    fileprivate func deposit(_ amount: Money, into account: Account) throws(BankError) {
        try checkForeign(account)
        try account.addMoney(amount)
    }

    fileprivate func withdraw(_ amount: Money, from account: Account) throws(BankError) {
        try checkForeign(account)
        try account.subtractMoney(amount)
    }

    fileprivate func close(_ account: Account) throws(BankError) -> Money {
        try checkForeign(account)
        return try account.closeAccount()
    }

    private func checkForeign(_ account: Account) throws(BankError) {
        guard account.bank === self else { throw .unknownAccount(account.id) }
    }
}

extension BankModel.State {
    /// The model's semantics, in the order `Bank` checks things.
    fileprivate mutating func apply(_ input: BankModel.Input) throws(BankError) -> BankOutput {
        switch input {
        case .open(let amount):
            guard amount >= 0 else { throw .invalidAmount(Money(minorUnits: amount)) }
            guard !total.addingReportingOverflow(amount).overflow else { throw .overflow }
            balances.append(amount)
            closed.append(false)
            return .opened(balances.count)
        case .deposit(let position, let amount):
            guard exists(position) else { return .noSuchAccount }
            try checkOwnAndOpen(position, amount: amount)
            let (new, overflow) = balances[position].addingReportingOverflow(amount)
            guard !overflow, !total.addingReportingOverflow(amount).overflow else { throw .overflow }
            balances[position] = new
            return .done
        case .withdraw(let position, let amount):
            guard exists(position) else { return .noSuchAccount }
            try checkOwnAndOpen(position, amount: amount)
            try checkFunds(position, amount)
            balances[position] -= amount
            return .done
        case .transfer(let source, let destination, let amount):
            guard exists(source), exists(destination) else { return .noSuchAccount }
            try checkOwn(source)
            try checkOwn(destination)
            guard source != destination else { throw .sameAccount(AccountID(number: source + 1)) }
            try checkAmount(amount)
            try checkOpen(source)
            try checkOpen(destination)
            try checkFunds(source, amount)
            balances[source] -= amount
            balances[destination] += amount
            return .done
        case .balance(let position):
            guard exists(position) else { return .noSuchAccount }
            return .money(position == BankModel.foreign ? 0 : balances[position])
        case .close(let position):
            guard exists(position) else { return .noSuchAccount }
            try checkOwn(position)
            try checkOpen(position)
            defer {
                balances[position] = 0
                closed[position] = true
            }
            return .money(balances[position])
        case .total:
            return .money(total)
        }
    }

    private var total: Int64 { balances.reduce(0, +) }

    /// Whether the position names an account: one of this bank's, or the foreign one.
    private func exists(_ position: Int) -> Bool { position == BankModel.foreign || position < balances.count }

    private func checkOwn(_ position: Int) throws(BankError) {
        // The foreign account is the first of its bank.
        guard position != BankModel.foreign else { throw .unknownAccount(AccountID(number: 1)) }
    }

    private func checkOwnAndOpen(_ position: Int, amount: Int64) throws(BankError) {
        try checkOwn(position)
        try checkAmount(amount)
        try checkOpen(position)
    }

    private func checkAmount(_ amount: Int64) throws(BankError) {
        guard amount > 0 else { throw .invalidAmount(Money(minorUnits: amount)) }
    }

    private func checkOpen(_ index: Int) throws(BankError) {
        guard !closed[index] else { throw .accountClosed(AccountID(number: index + 1)) }
    }

    private func checkFunds(_ index: Int, _ amount: Int64) throws(BankError) {
        guard balances[index] >= amount else {
            throw .insufficientFunds(
                AccountID(number: index + 1), balance: Money(minorUnits: balances[index]),
                requested: Money(minorUnits: amount))
        }
    }
}
