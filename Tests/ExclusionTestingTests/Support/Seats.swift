import Exclusion

// The example that opens the article "Exploring schedules": seats on a flight, reserved from a
// thread and from a task. The article quotes this file; ExploringSchedulesArticleTests runs it.

/// What a check throws when a seat was sold twice.
struct Overbooked: Error {}

/// The seats of a flight, and the reservations made.
final class Seats: Sendable {
    private let reservations = Exclusive([Int](), label: "reservations")

    /// Reserves `seat` unless it is taken; whether it did.
    func reserve(_ seat: Int) throws -> Bool {
        if reservations.access({ $0.contains(seat) }) { return false }
        reservations.access { $0.append(seat) }
        return true
    }

    /// The same, from a task.
    func reserveAsync(_ seat: Int) async throws -> Bool {
        if await reservations.access({ $0.contains(seat) }) { return false }
        await reservations.access { $0.append(seat) }
        return true
    }

    /// How many reservations were made.
    var count: Int { reservations.access { $0.count } }
}

/// The seats, fixed: the check and the reservation in one access.
final class FixedSeats: Sendable {
    private let reservations = Exclusive([Int](), label: "reservations")

    func reserve(_ seat: Int) throws -> Bool {
        reservations.access { reservations in
            if reservations.contains(seat) { return false }
            reservations.append(seat)
            return true
        }
    }

    func reserveAsync(_ seat: Int) async throws -> Bool {
        await reservations.access { reservations in
            if reservations.contains(seat) { return false }
            reservations.append(seat)
            return true
        }
    }

    var count: Int { reservations.access { $0.count } }
}
