/// Checks the changes a reader was given against the bank: each account's changes must chain from
/// its opening to its balance now, so a change lost, given twice or out of order breaks the chain.
///
/// Every account starts at zero (its opening is a change from zero), each change must start from
/// where the account's previous change left it, no change may follow its closing, and at the end
/// every account must stand where its last change left it. With the count of changes committed
/// this is what "in commit order, none lost, none twice" means for one account at a time.
struct ChangeAudit: Sendable {
    private var accounts: [AccountID: (balance: Money, isClosed: Bool)] = [:]
    /// How many changes were added.
    private(set) var count = 0
    /// The first change that didn't follow from the ones before it, described.
    private(set) var firstBreak: String?

    /// An audit of a reader that starts from a bank with no accounts.
    init() {}

    /// An audit of a reader that starts when `accounts` already stand where they stand now.
    init(startingFrom accounts: [Account]) {
        for account in accounts { self.accounts[account.id] = (account.balance, account.isClosed) }
    }

    /// Adds the next change the reader was given.
    mutating func add(_ change: AccountChange) {
        count += 1
        let before = accounts[change.account] ?? (balance: .zero, isClosed: false)
        if firstBreak == nil {
            if before.isClosed {
                firstBreak = "change \(count) is of account \(change.account), which an earlier change closed"
            } else if change.oldBalance != before.balance {
                firstBreak =
                    "change \(count) takes account \(change.account) from \(change.oldBalance), "
                    + "but the change before left it at \(before.balance)"
            }
        }
        accounts[change.account] = (change.newBalance, change.isClosed)
    }

    /// What is wrong with the changes, given the bank's accounts now and how many changes were
    /// committed since the reader started; nil when nothing is.
    func problem(accounts final: [Account], committed: Int) -> String? {
        if let firstBreak { return firstBreak }
        if count != committed { return "\(committed) changes committed, \(count) given" }
        for account in final {
            let last = accounts[account.id] ?? (balance: .zero, isClosed: false)
            if last.balance != account.balance || last.isClosed != account.isClosed {
                return
                    "account \(account.id) stands at \(account.balance), but its last change left it at \(last.balance)"
            }
        }
        return nil
    }
}
