import Exclusion
import ExclusionTesting

// The ledger of the article "Exploring schedules", and issue #32's planted bug (a): a transfer that
// checks the balance in one access and moves the money in another. The article's table quotes the
// line numbers of this file: ExploringSchedulesArticleTests checks that it still prints that table.

/// Two accounts, one operation at a time: transfers between them, and balances.
struct TransferModel: SequentialModel {
    enum Input: Sendable, Hashable, CustomStringConvertible {
        case transfer(Int, from: Int, to: Int)
        case balance(Int)

        var description: String {
            switch self {
            case .transfer(let amount, let source, let destination):
                "transfer(\(amount) from \(source) to \(destination))"
            case .balance(let account): "balance(\(account))"
            }
        }
    }

    enum Output: Sendable, Equatable, CustomStringConvertible {
        case transferred
        case insufficientFunds
        case balance(Int)

        var description: String {
            switch self {
            case .transferred: "transferred"
            case .insufficientFunds: "insufficient funds"
            case .balance(let amount): "\(amount)"
            }
        }
    }

    var initialState: [Int] { [100, 0] }

    func step(_ balances: [Int], _ input: Input) -> (output: Output, state: [Int]) {
        switch input {
        case .transfer(let amount, let source, let destination):
            guard balances[source] >= amount else { return (.insufficientFunds, balances) }
            var after = balances
            after[source] -= amount
            after[destination] += amount
            return (.transferred, after)
        case .balance(let account):
            return (.balance(balances[account]), balances)
        }
    }

    /// Mostly transfers of 60 out of the first account, which holds 100: only one can succeed.
    static func generate(_ generator: inout ScenarioGenerator) -> Input {
        Int.random(in: 0..<4, using: &generator) == 0 ? .balance(0) : .transfer(60, from: 0, to: 1)
    }
}

/// The accounts of `TransferModel`, in one `Exclusive`.
final class Ledger: Sendable {
    private let balances = Exclusive([100, 0], label: "ledger")
    private let checksInItsOwnAccess: Bool

    /// With `checksInItsOwnAccess`, a transfer checks the balance in one access and moves the money
    /// in another: the bug.
    init(checksInItsOwnAccess: Bool = false) {
        self.checksInItsOwnAccess = checksInItsOwnAccess
    }

    func apply(_ input: TransferModel.Input) -> TransferModel.Output {
        switch input {
        case .balance(let account):
            return .balance(balances.access { $0[account] })
        case .transfer(let amount, let source, let destination) where checksInItsOwnAccess:
            return transferInTwoAccesses(amount, from: source, to: destination) ? .transferred : .insufficientFunds
        case .transfer(let amount, let source, let destination):
            return transfer(amount, from: source, to: destination) ? .transferred : .insufficientFunds
        }
    }

    private func transferInTwoAccesses(_ amount: Int, from source: Int, to destination: Int) -> Bool {
        guard balances.access({ $0[source] }) >= amount else { return false }
        balances.access { balances in
            balances[source] -= amount
            balances[destination] += amount
        }
        return true
    }

    private func transfer(_ amount: Int, from source: Int, to destination: Int) -> Bool {
        balances.access { balances in
            guard balances[source] >= amount else { return false }
            balances[source] -= amount
            balances[destination] += amount
            return true
        }
    }
}

// MARK: - The same, awaited

extension Ledger {
    /// `apply`, with awaited accesses: the twin the explorer must find as it finds the original.
    func applyAwaited(_ input: TransferModel.Input) async -> TransferModel.Output {
        switch input {
        case .balance(let account):
            return .balance(await balances.access { $0[account] })
        case .transfer(let amount, let source, let destination) where checksInItsOwnAccess:
            guard await balances.access({ $0[source] }) >= amount else { return .insufficientFunds }
            await balances.access { balances in
                balances[source] -= amount
                balances[destination] += amount
            }
            return .transferred
        case .transfer(let amount, let source, let destination):
            let moved = await balances.access { balances in
                guard balances[source] >= amount else { return false }
                balances[source] -= amount
                balances[destination] += amount
                return true
            }
            return moved ? .transferred : .insufficientFunds
        }
    }
}
