import Banking
import Testing

/// README.md's example of the Bank, compiled and run, so that it can't drift from the API.
@Suite("README's bank example")
struct ReadmeExampleTests {
    @Test func transferBetweenTwoAccounts() throws {
        let bank = Bank()
        let checking = try bank.openAccount(initialBalance: Money("100.00")!)
        let savings = try bank.openAccount()
        try bank.transferMoneyAmount(Money("25.00")!, from: checking, to: savings)
        #expect("\(checking.balance) \(savings.balance)" == "75.00 25.00")
    }
}
