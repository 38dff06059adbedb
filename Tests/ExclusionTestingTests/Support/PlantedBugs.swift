import Exclusion
import ExclusionTesting

// The four bugs of issue #32 that a scheduler rarely shows, each with its fix: objects built on
// Exclusion that are wrong only in one interleaving, and the models that say what is right.

// (a), a transfer in two accesses, is the ledger of `Ledger.swift`.

// MARK: - (b) A shared object created lazily, check then act

/// A counter that every thread increments: the output is the count after the increment.
struct IncrementModel: SequentialModel {
    enum Input: Sendable, CustomStringConvertible {
        case increment
        var description: String { "increment" }
    }

    var initialState: Int { 0 }

    func step(_ count: Int, _ input: Input) -> (output: Int, state: Int) { (count + 1, count + 1) }
}

/// A counter made the first time it is needed.
final class LazyCounter: Sendable {
    private let slot = Exclusive<Exclusive<Int>?>(nil, label: "slot")
    private let checksThenActs: Bool

    /// With `checksThenActs`, the slot is looked at in one access and filled in another: two
    /// threads can each make a counter, and one of them counts alone.
    init(checksThenActs: Bool) {
        self.checksThenActs = checksThenActs
    }

    func increment() -> Int {
        counter.access { count in
            count += 1
            return count
        }
    }

    private var counter: Exclusive<Int> {
        if checksThenActs {
            if let made = slot.access({ $0 }) { return made }
            let made = Exclusive(0, label: "counter")
            slot.access { $0 = made }
            return made
        }
        return slot.access { slot in
            if let made = slot { return made }
            let made = Exclusive(0, label: "counter")
            slot = made
            return made
        }
    }
}

// MARK: - (c) A total over several instances

/// Two accounts, one instance each: thread 0 moves money between them, thread 1 adds them up.
struct TotalModel: SequentialModel {
    enum Input: Sendable, CustomStringConvertible {
        case move(Int, from: Int, to: Int)
        case total

        var description: String {
            switch self {
            case .move(let amount, let source, let destination): "move(\(amount) from \(source) to \(destination))"
            case .total: "total"
            }
        }
    }

    var initialState: [Int] { [100, 0] }

    func step(_ balances: [Int], _ input: Input) -> (output: Int, state: [Int]) {
        switch input {
        case .move(let amount, let source, let destination):
            var after = balances
            after[source] -= amount
            after[destination] += amount
            return (after[destination], after)
        case .total:
            return (balances.reduce(0, +), balances)
        }
    }

    static func generate(_ generator: inout ScenarioGenerator) -> Input {
        guard generator.thread == 0 else { return .total }
        return Bool.random(using: &generator) ? .move(60, from: 0, to: 1) : .move(30, from: 1, to: 0)
    }
}

/// Accounts in instances of their own. A move holds both, nested lower-numbered first.
final class Accounts: Sendable {
    private let balances = [Exclusive(100, label: "account 0"), Exclusive(0, label: "account 1")]
    private let sumsOneAtATime: Bool

    /// With `sumsOneAtATime`, the total reads the accounts one after the other, holding one at a
    /// time: a move can fall between two of the reads.
    init(sumsOneAtATime: Bool) {
        self.sumsOneAtATime = sumsOneAtATime
    }

    /// Moves `amount` from `source` to `destination`, whose balances are `first` (the lower
    /// numbered) and `second`; returns the destination's new balance.
    static func move(
        _ amount: Int, from source: Int, to destination: Int, _ first: inout Int, _ second: inout Int
    ) -> Int {
        if source < destination {
            first -= amount
            second += amount
            return second
        }
        second -= amount
        first += amount
        return first
    }

    func apply(_ input: TotalModel.Input) -> Int {
        switch input {
        case .move(let amount, let source, let destination):
            return balances[min(source, destination)].access { first in
                balances[max(source, destination)].access { second in
                    Self.move(amount, from: source, to: destination, &first, &second)
                }
            }
        case .total where sumsOneAtATime:
            return balances.map { $0.access { $0 } }.reduce(0, +)
        case .total:
            return balances[0].access { first in balances[1].access { second in first + second } }
        }
    }
}

// MARK: - (d) Two instances nested in opposite orders

/// Moves of one unit between two instances: thread 0 from the first to the second, thread 1 back.
/// The output is the balance of the account moved to.
struct SwapModel: SequentialModel {
    enum Input: Sendable, CustomStringConvertible {
        case move(from: Int, to: Int)
        var description: String {
            switch self {
            case .move(let source, let destination): "move(from \(source) to \(destination))"
            }
        }
    }

    var initialState: [Int] { [10, 10] }

    func step(_ balances: [Int], _ input: Input) -> (output: Int, state: [Int]) {
        guard case .move(let source, let destination) = input else { return (0, balances) }
        var after = balances
        after[source] -= 1
        after[destination] += 1
        return (after[destination], after)
    }

    static func generate(_ generator: inout ScenarioGenerator) -> Input {
        generator.thread == 0 ? .move(from: 0, to: 1) : .move(from: 1, to: 0)
    }
}

/// Two instances and moves between them.
final class Pair: Sendable {
    private let balances = [Exclusive(10, label: "A"), Exclusive(10, label: "B")]
    private let nestsSourceFirst: Bool
    private let innerLimit: Duration?

    /// With `nestsSourceFirst`, a move takes the account it moves from first: moves in opposite
    /// directions nest the two in opposite orders, and deadlock if each takes its first at once.
    /// With an `innerLimit`, the inner access gives up after it and the move returns -1: a
    /// deadlock a run on real threads can report.
    init(nestsSourceFirst: Bool, innerLimit: Duration? = nil) {
        self.nestsSourceFirst = nestsSourceFirst
        self.innerLimit = innerLimit
    }

    func apply(_ input: SwapModel.Input) -> Int {
        guard case .move(let source, let destination) = input else { return 0 }
        let (outer, inner) = nestsSourceFirst || source < destination ? (source, destination) : (destination, source)
        let towardsInner = outer == source
        return balances[outer].access { outerBalance in
            guard let innerLimit else {
                return balances[inner].access { Self.move(&outerBalance, &$0, towardsInner: towardsInner) }
            }
            let moved = try? balances[inner].access(when: { _ in true }, timeout: innerLimit) { innerBalance in
                Self.move(&outerBalance, &innerBalance, towardsInner: towardsInner)
            }
            return moved ?? -1
        }
    }

    /// Moves one unit between the two, and returns the balance of the one moved to.
    private static func move(_ outer: inout Int, _ inner: inout Int, towardsInner: Bool) -> Int {
        if towardsInner {
            outer -= 1
            inner += 1
            return inner
        }
        outer += 1
        inner -= 1
        return outer
    }
}

// MARK: - The awaited twins

extension LazyCounter {
    /// `increment`, with awaited accesses.
    func incrementAwaited() async -> Int {
        let counter: Exclusive<Int>
        if checksThenActs {
            if let made = await slot.access({ $0 }) {
                counter = made
            } else {
                let made = Exclusive(0, label: "counter")
                await slot.access { $0 = made }
                counter = made
            }
        } else {
            counter = await slot.access { slot in
                if let made = slot { return made }
                let made = Exclusive(0, label: "counter")
                slot = made
                return made
            }
        }
        return await counter.access { count in
            count += 1
            return count
        }
    }
}

extension Accounts {
    /// `apply`, with the outer accesses awaited (an access nested in another can't be: its body is
    /// synchronous).
    func applyAwaited(_ input: TotalModel.Input) async -> Int {
        switch input {
        case .move(let amount, let source, let destination):
            let (low, high) = (balances[min(source, destination)], balances[max(source, destination)])
            return await low.access { first in
                high.access { (second: inout Int) -> Int in
                    Self.move(amount, from: source, to: destination, &first, &second)
                }
            }
        case .total where sumsOneAtATime:
            var total = 0
            for balance in balances { total += await balance.access { $0 } }
            return total
        case .total:
            let second = balances[1]
            return await balances[0].access { first in second.access { (second: inout Int) in first + second } }
        }
    }
}

extension Pair {
    /// `apply` without its inner limit, with the outer access awaited.
    func applyAwaited(_ input: SwapModel.Input) async -> Int {
        guard case .move(let source, let destination) = input else { return 0 }
        let (outer, inner) = nestsSourceFirst || source < destination ? (source, destination) : (destination, source)
        let towardsInner = outer == source
        let innerBalance = balances[inner]
        return await balances[outer].access { outerBalance in
            innerBalance.access { (balance: inout Int) in Self.move(&outerBalance, &balance, towardsInner: towardsInner)
            }
        }
    }
}
