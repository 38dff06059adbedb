import Exclusion
import ExclusionTestSupport
import ExclusionTesting
import Testing

// The example of the article "Checking your own types", kept compiling and true.

private final class BoxOffice: Sendable {
    private let seats = Exclusive(0, label: "box office")
    private let broken: Bool

    init(broken: Bool = false) {
        self.broken = broken
    }

    /// Sells one seat; returns its number, counting from 1.
    func sell() -> Int {
        if broken {
            // The "optimization" of the article: read in one access, write in another.
            let sold = seats.access { $0 }
            seats.access { $0 = sold + 1 }
            return sold + 1
        }
        return seats.access { sold in
            sold += 1
            return sold
        }
    }

    var soldCount: Int { seats.access { $0 } }
}

private struct BoxOfficeModel: SequentialModel {
    enum Input: Sendable { case sell, soldCount }

    var initialState: Int { 0 }

    func step(_ sold: Int, _ input: Input) -> (output: Int, state: Int) {
        switch input {
        case .sell: (sold + 1, sold + 1)
        case .soldCount: (sold, sold)
        }
    }
}

@Suite("Checking your own types (the article's example)", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct CheckingYourOwnTypesTests {
    private func run(broken: Bool) async -> ScenarioReport<BoxOfficeModel.Input, Int> {
        // A broken box office runs until caught: how soon depends on how the scheduler interleaves
        // the threads, and other tests compete for the cores.
        await ScenarioRunner(
            model: BoxOfficeModel(), histories: broken ? .max : 2_000, timeLimit: .seconds(broken ? 60 : 30)
        ).run(
            setUp: { BoxOffice(broken: broken) },
            inputs: { generator in Int.random(in: 0..<3, using: &generator) == 0 ? .soldCount : .sell },
            perform: { office, input in
                switch input {
                case .sell: office.sell()
                case .soldCount: office.soldCount
                }
            })
    }

    @Test func theBoxOfficeIsLinearizable() async {
        expectLinearizable(await run(broken: false), "the article's box office")
    }

    @Test func theBrokenBoxOfficeIsCaught() async {
        let report = await run(broken: true)
        expectViolation(report, "the article's broken box office")
    }
}
