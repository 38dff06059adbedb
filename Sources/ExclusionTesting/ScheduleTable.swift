/// The table a failing schedule is printed as: one column per thread (and per drain of submitted
/// work), one row per event, each step numbered where it begins.
enum ScheduleTable {
    /// `events` under the `columns`' names. A step marked `*` preempted the thread that ran before it.
    static func render(columns: [String], events: [ScheduleEvent]) -> String {
        var widths = columns.map(\.count)
        for event in events { widths[event.entity] = max(widths[event.entity], event.text.count) }
        let stepWidth = max(4, String(events.last?.step ?? 0).count + 1)

        func row(_ step: String, _ cells: [String]) -> String {
            let padded = cells.enumerated().map { column, cell in
                cell + String(repeating: " ", count: widths[column] - cell.count)
            }
            let line = pad(step, stepWidth) + " | " + padded.joined(separator: " | ")
            return String(line.reversed().drop { $0 == " " }.reversed())
        }

        var lines = [row("step", columns)]
        lines.append(
            String(repeating: "-", count: stepWidth) + "-+-"
                + widths.map { String(repeating: "-", count: $0) }.joined(separator: "-+-"))
        var lastStep = -1
        for event in events {
            var cells = Array(repeating: "", count: columns.count)
            cells[event.entity] = event.text
            let step = event.step == lastStep ? "" : "\(event.step)" + (event.preempted ? "*" : " ")
            lastStep = event.step
            lines.append(row(step, cells))
        }
        if events.contains(where: \.preempted) {
            lines.append("* the step preempted the thread that ran before it")
        }
        return lines.joined(separator: "\n")
    }

    /// `text` right-aligned in `width`.
    private static func pad(_ text: String, _ width: Int) -> String {
        String(repeating: " ", count: max(0, width - text.count)) + text
    }
}
