import RunLoopKit

/// The table of `portsniff --top`: its columns, as many as a terminal's width
/// leaves room for, and its rows, sorted by the order chosen.
extension TopView {
    /// A column of the table, right-aligned but for the name.
    private struct Column {
        let title: String
        let width: Int
        let order: Order?
        var isName = false
        let text: (TopRow) -> String
    }

    /// The title row and the rows of `table`, sorted, fitted to `width`
    /// (nil: as wide as the names need).
    func tableLines(_ table: Table, width: Int?) -> (titles: String, rows: [String], estimated: Bool) {
        let rows: [TopRow] = switch table {
        case .ports: Array(ports.values)
        case .processes: Array(processes.values)
        case .threads: Array(threads.values)
        }
        let nameTitle = switch table {
        case .ports: "PORT"
        case .processes: "PROCESS"
        case .threads: "THREAD"
        }
        var columns = Self.figureColumns
        if table != .ports {
            let digits = rows.map { "\($0.id ?? 0)".count }.max() ?? 0
            columns.insert(Column(title: table == .processes ? "PID" : "TID", width: max(3, digits), order: nil) { "\($0.id ?? 0)" }, at: 0)
        }
        let nameWidth: Int
        if let width {
            // A narrow terminal loses the columns least needed first, so that names stay readable.
            func room() -> Int { width - columns.reduce(0) { $0 + $1.width + 1 } }
            for title in ["DROPS", "P50", "EVENTS", "B/S", "MSG/S", "P99", "DROP/S", "PID", "TID"] where room() < Self.minimumNameWidth {
                columns.removeAll { $0.title == title }
            }
            nameWidth = max(1, room())
        } else {
            nameWidth = min(Self.plainNameWidth, max(nameTitle.count + 1, rows.map { $0.name.count + $0.context.count }.max() ?? 0))
        }
        let nameColumn = Column(title: nameTitle, width: nameWidth, order: .name, isName: true) { row in
            row.name.count + row.context.count <= nameWidth ? row.name + row.context : row.name
        }
        // After the PID or TID, if a narrow terminal left it.
        let hasID = columns.first.map { $0.title == "PID" || $0.title == "TID" } ?? false
        columns.insert(nameColumn, at: hasID ? 1 : 0)
        func line(_ cells: [String]) -> String {
            let text = zip(columns, cells).map { column, cell in
                column.isName ? TopText.pad(cell.cutInMiddle(to: column.width), column.width) : TopText.padLeft(cell, column.width)
            }.joined(separator: " ")
            return TopText.trimmed(width.map { TopText.fit(text, $0) } ?? text)
        }
        // The sorted column's title carries an arrow: ▼ highest (or Z) first, ▲ lowest (or A).
        let arrow = (order == .name) != reversed ? "▲" : "▼"
        let titles = line(columns.map { $0.order == order ? $0.title + arrow : $0.title })
        let estimated = rows.contains { $0.figures.anyEstimated }
        return (titles, sortedRows(rows).map { row in line(columns.map { $0.text(row) }) }, estimated)
    }

    private static let minimumNameWidth = 10
    private static let plainNameWidth = 40

    private static var figureColumns: [Column] {
        [
            Column(title: "EV/S", width: 7, order: .rate) { TopText.number($0.figures.rate, estimated: $0.figures.rateEstimated) },
            Column(title: "MSG/S", width: 6, order: .messages) { TopText.number($0.figures.messages) },
            Column(title: "B/S", width: 6, order: .bytes) { TopText.number($0.figures.bytes) },
            Column(title: "DROP/S", width: 7, order: .drops) { TopText.number($0.figures.drops, estimated: $0.figures.dropsEstimated) },
            Column(title: "P50", width: 6, order: nil) { TopText.latency($0.figures.p50) },
            Column(title: "P99", width: 6, order: .latency) { TopText.latency($0.figures.p99) },
            Column(title: "EVENTS", width: 7, order: nil) { TopText.number(Double($0.figures.totalEvents), estimated: $0.figures.totalEventsEstimated) },
            Column(title: "DROPS", width: 7, order: nil) { TopText.number(Double($0.figures.totalDrops), estimated: $0.figures.totalDropsEstimated) },
        ]
    }

    private func sortedRows(_ rows: [TopRow]) -> [TopRow] {
        func key(_ row: TopRow) -> Double? {
            switch order {
            case .rate: row.figures.rate
            case .drops: row.figures.drops
            case .latency: row.figures.p99.map(Double.init)
            case .messages: row.figures.messages
            case .bytes: row.figures.bytes
            case .name: nil
            }
        }
        let sorted = rows.sorted { lhs, rhs in
            if order != .name {
                let left = key(lhs) ?? -1, right = key(rhs) ?? -1
                // Rounded as shown, so that rows showing one figure stay in name order.
                if left.rounded() != right.rounded() { return left.rounded() > right.rounded() }
            }
            return (lhs.name + lhs.context, lhs.id ?? 0) < (rhs.name + rhs.context, rhs.id ?? 0)
        }
        return reversed ? sorted.reversed() : sorted
    }
}
