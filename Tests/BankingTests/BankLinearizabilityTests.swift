import Dispatch
import ExclusionTesting
import Testing

@testable import Banking

/// Thousands of short concurrent histories of every bank operation, in both configurations, each
/// checked against `BankModel`; and a bank whose transfer takes two accesses, which must be caught.
@Suite("Bank linearizability", .timeLimit(.minutes(10)))
struct BankLinearizabilityTests {
    static let notifications = DispatchQueue(label: "bank linearizability notifications")
    static let foreignAccount = try! Bank(notificationQueue: notifications).openAccount()

    /// Mostly transfers and reads, some of everything else; accounts 0 and 1 exist from the start,
    /// 2 and 3 only once opened.
    static func generate(_ generator: inout ScenarioGenerator) -> BankModel.Input {
        func position() -> Int {
            Int.random(in: 0..<50, using: &generator) == 0
                ? BankModel.foreign : Int.random(in: 0..<4, using: &generator)
        }
        func amount() -> Int64 {
            Int.random(in: 0..<20, using: &generator) == 0 ? 0 : Int64.random(in: 1...60, using: &generator)
        }
        return switch Int.random(in: 0..<20, using: &generator) {
        case 0: .open(Int64.random(in: 0...50, using: &generator))
        case 1: .close(position())
        case 2, 3: .deposit(position(), amount())
        case 4, 5: .withdraw(position(), amount())
        case 6..<12: .transfer(position(), position(), amount())
        case 12..<16: .balance(position())
        default: .total
        }
    }

    @Test(arguments: [Bank.Concurrency.serial, .readersWriter])
    func everyOperationIsLinearizable(_ concurrency: Bank.Concurrency) async {
        let model = BankModel()
        let report = await ScenarioRunner(model: model, histories: 2_000).run(
            setUp: { model.makeBank(concurrency, notifyingOn: Self.notifications) },
            inputs: Self.generate,
            perform: { bank, input in BankModel.perform(input, on: bank, foreignAccount: Self.foreignAccount) })
        print("Bank (\(concurrency)): \(report.description.prefix { $0 != "\n" })")
        #expect(report.passed, "\(report)")
    }

    @Test func aTransferInTwoAccessesIsCaught() async {
        let model = BankModel()
        let report = await ScenarioRunner(model: model, histories: .max, timeLimit: .seconds(60)).run(
            setUp: { model.makeBank(.serial, notifyingOn: Self.notifications) },
            inputs: Self.generate,
            perform: { bank, input in
                guard case .transfer(let source, let destination, let amount) = input,
                    source >= 0, destination >= 0, source != destination, amount > 0
                else {
                    return BankModel.perform(input, on: bank, foreignAccount: Self.foreignAccount)
                }
                // The broken variant: take the money out in one access, put it in with another.
                let accounts = bank.accounts
                guard source < accounts.count, destination < accounts.count else { return .noSuchAccount }
                do throws(BankError) {
                    try accounts[source].subtractMoney(Money(minorUnits: amount))
                    try accounts[destination].addMoney(Money(minorUnits: amount))
                    return .done
                } catch {
                    return .refused(error)
                }
            })
        print("Bank with a two-access transfer, caught: \(report.description.prefix { $0 != "\n" })")
        #expect(report.violation != nil, "\(report)")
    }
}
