/// The order in which one pass runs the selected scenarios: each once, in
/// report order, and a scenario visited several times a pass
/// (`Scenario.visitsPerPass`) at places spread evenly round the pass.
///
/// Its visits start at its own place and follow every n / v scenarios
/// (n selected, v visits), counted round the pass as a ring: passes follow
/// one another, so the visits stay evenly spaced across a pass's end too.
/// A visit that lands on another scenario's place runs after it. Each
/// visit is one more draw of the host's pace for the scenario's rows
/// (Passes.pool pools them as it pools passes).
struct PassSchedule {
    /// Indices into the selected scenarios, in the order a pass runs them.
    let order: [Int]
    private let lastSteps: Set<Int>

    init(visits: [Int]) {
        let count = Double(visits.count)
        var places: [(place: Double, extra: Bool, index: Int)] = []
        for (index, times) in visits.enumerated() {
            precondition(times >= 1, "a scenario is visited at least once a pass")
            for visit in 0..<times {
                let place = (Double(index) + Double(visit) * count / Double(times))
                    .truncatingRemainder(dividingBy: count)
                places.append((place, visit > 0, index))
            }
        }
        places.sort { ($0.place, $0.extra ? 1 : 0, $0.index) < ($1.place, $1.extra ? 1 : 0, $1.index) }
        order = places.map(\.index)
        var last: [Int: Int] = [:]
        for (step, index) in order.enumerated() { last[index] = step }
        lastSteps = Set(last.values)
    }

    /// Whether the scenario run at `step` has no visit after it in the pass.
    func isLastVisit(at step: Int) -> Bool { lastSteps.contains(step) }
}
