import Exclusion
import ExclusionTestSupport
import Testing

// The code of the "Observing changes" article, as it is printed there, compiled and run.

// MARK: - From the article

private let inventory = Exclusive(["apples": 3], label: "inventory")

@MainActor final class InventoryBadge {
    var text = ""

    func keepCurrent() async {
        for await count in inventory.values({ $0.values.reduce(0, +) }) {
            text = "\(count) items"  // on the main actor, where the loop runs
        }
    }
}

private func addPears() {
    // Anywhere else, on any thread; nothing here knows about the badge:
    inventory.access { $0["pears", default: 0] += 2 }
}

// MARK: - Running it

@Suite("Observing changes (the article's example)", .patientTimeLimit(minutes: 10))
struct ObservingChangesArticleTests {
    @MainActor @Test func theBadgeShowsTheCountNowThenEachChange() async {
        let badge = InventoryBadge()
        let loop = Task { await badge.keepCurrent() }  // on the main actor, like the badge
        #expect(await eventuallyOnTheMainActor { badge.text == "3 items" })
        await onItsOwnThread { addPears() }
        #expect(await eventuallyOnTheMainActor { badge.text == "5 items" })
        loop.cancel()
        _ = await loop.outcome()
    }
}
