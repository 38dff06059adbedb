import Dispatch
import ExclusionTestSupport
import PropertyBased
import Testing

@testable import Banking

/// Random single-threaded sequences of bank operations, replayed on a real `Bank` and on
/// `BankModel` side by side: every output must match, refusals included, and a refusal must leave
/// the bank exactly as it was. A failure prints the seed to replay and the shrunk sequence.
@Suite("Bank properties", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct BankPropertyTests {
    static let notifications = DispatchQueue(label: "bank property notifications")
    static let foreignAccount = try! Bank(notificationQueue: notifications).openAccount()

    /// Positions past the end, the foreign account, zero and negative amounts, and amounts near
    /// the limit of `Int64` cents all come up, so every refusal does.
    static let operations = {
        let position = Gen.int(in: -1...4)
        let amount = Gen<Int64>.frequency(
            (weight: 8, gen: Gen.int64(in: -2...150)),
            (weight: 1, gen: Gen.int64(in: (Int64.max - 200)...Int64.max)))
        let operation = Gen<BankModel.Input>.frequency(
            (weight: 1, gen: amount.map { BankModel.Input.open($0) }),
            (weight: 2, gen: zip(position, amount).map { BankModel.Input.deposit($0, $1) }),
            (weight: 2, gen: zip(position, amount).map { BankModel.Input.withdraw($0, $1) }),
            (weight: 3, gen: zip(position, position, amount).map { BankModel.Input.transfer($0, $1, $2) }),
            (weight: 1, gen: position.map { BankModel.Input.balance($0) }),
            (weight: 1, gen: position.map { BankModel.Input.close($0) }),
            (weight: 1, gen: Gen.always(BankModel.Input.total)))
        return operation.array(of: 0...40)
    }()

    @Test(arguments: [Bank.Concurrency.serial, .readersWriter])
    func aBankMatchesTheSequentialModelExactly(_ concurrency: Bank.Concurrency) async {
        await propertyCheck(count: 300, input: Self.operations) { operations in
            if let mismatch = Self.replay(operations, concurrency, perform: BankModel.perform) {
                Issue.record(Comment(rawValue: mismatch))
            }
        }
    }

    @Test func aBankThatDiffersInOneRuleIsCaught() async {
        // A check that can't fail proves nothing: a bank whose close reports no payout must be
        // told apart from the model, and the failure shrunk to a few operations.
        await withKnownIssue("close reports 0 paid out") {
            await propertyCheck(count: 300, input: Self.operations) { operations in
                let mismatch = Self.replay(operations, .serial) { operation, bank, foreign in
                    let output = BankModel.perform(operation, on: bank, foreignAccount: foreign)
                    if case .close = operation, case .money = output { return .money(0) }
                    return output
                }
                if let mismatch { Issue.record(Comment(rawValue: mismatch)) }
            }
        }
    }

    /// Runs `operations` on a fresh bank and on the model; describes the first difference, if any.
    static func replay(
        _ operations: [BankModel.Input], _ concurrency: Bank.Concurrency,
        perform: (BankModel.Input, Bank, Account) -> BankOutput
    ) -> String? {
        let model = BankModel()
        let bank = model.makeBank(concurrency, notifyingOn: notifications)
        var state = model.initialState
        for (step, operation) in operations.enumerated() {
            let before = snapshot(of: bank)
            let (expected, next) = model.step(state, operation)
            let actual = perform(operation, bank, foreignAccount)
            guard actual == expected else {
                return "step \(step), \(operation): the bank gave \(actual), the model \(expected)"
            }
            if case .refused = actual, snapshot(of: bank) != before {
                return "step \(step), \(operation): refused, but the bank changed"
            }
            state = next
            guard snapshot(of: bank) == snapshot(of: state) else {
                return "step \(step), \(operation): the bank holds \(snapshot(of: bank)), the model \(state)"
            }
        }
        return nil
    }

    /// Balances, closed flags and the total, as text that compares.
    static func snapshot(of bank: Bank) -> [String] {
        bank.accounts.map { "\($0.balance.minorUnits) \($0.isClosed)" } + [
            "total \(bank.totalBalanceInAllAccounts.minorUnits)"
        ]
    }

    static func snapshot(of state: BankModel.State) -> [String] {
        zip(state.balances, state.closed).map { "\($0) \($1)" } + ["total \(state.balances.reduce(0, +))"]
    }
}
