import Glibc

/// The `measure` child: makes one contender from its arguments, sets it up,
/// measures it once to warm it and once more for the samples, which it
/// prints on one line, and exits (InFreshProcess.swift says why).
enum MeasureChild {
    /// `kind placement ...`: the contenders that InFreshProcess measures
    /// (timer-changes-*: count, changes, batches, and for c-objects optional
    /// rounds of other work; timer-growth-*: the small and the large count,
    /// then as timer-changes-*; main-queue-drain-* and
    /// dispatch-flood: count, timeout in seconds).
    static func make(_ arguments: [String]) -> (any Contender)? {
        guard arguments.count >= 2, let mode = Placement.Mode(rawValue: arguments[1]) else { return nil }
        let placement = Placement(mode)
        let numbers = arguments.dropFirst(2).compactMap { Int($0) }
        switch (arguments[0], numbers.count) {
        case ("timer-changes-rlk", 3):
            return RLKTimerChanges(count: numbers[0], changes: numbers[1], batches: numbers[2], cpu: placement.second)
        case ("timer-changes-c", 3):
            return CTimerHeapChanges(count: numbers[0], changes: numbers[1], batches: numbers[2], cpu: placement.second)
        case ("timer-changes-c-objects", 3), ("timer-changes-c-objects", 4):
            // An optional fourth number: rounds of other work before each three changes.
            let work = numbers.count == 4 ? numbers[3] : 0
            return CTimerHeapChanges(.objects(workRounds: work), count: numbers[0], changes: numbers[1], batches: numbers[2], cpu: placement.second)
        case ("timer-growth-rlk", 4), ("timer-growth-c", 4), ("timer-growth-c-objects", 4), ("timer-growth-c-objects", 5):
            // Two timer-changes sides of the same kind, at the small and the large count.
            let kind = "timer-changes" + arguments[0].dropFirst("timer-growth".count)
            let rest = numbers[2...].map(String.init)
            let sides = numbers[0...1].compactMap { count in make([kind, arguments[1], String(count)] + rest) }
            return GrowthInOneDraw(label: sides[0].label, small: sides[0], large: sides[1], rounds: 2)
        case ("main-queue-drain-rlk", 2):
            return MainQueueDrainFlood(.runLoopKit, count: numbers[0], timeout: Double(numbers[1]), placement: placement)
        case ("main-queue-drain-foundation", 2):
            return MainQueueDrainFlood(.foundation, count: numbers[0], timeout: Double(numbers[1]), placement: placement)
        case ("dispatch-flood", 2):
            return DispatchFlood(count: numbers[0], timeout: Double(numbers[1]), placement: placement)
        default:
            return nil
        }
    }

    static func run(_ arguments: [String]) -> Int32 {
        guard let contender = make(arguments) else {
            FileHandleOut.error("rlk-bench --child measure: unknown contender or arguments: \(arguments)")
            return 2
        }
        do {
            try contender.setUp()
            defer { contender.tearDown() }
            _ = try contender.measure()
            let samples = try contender.measure()
            FileHandleOut.out(samples.map { String($0) }.joined(separator: " "))
            return 0
        } catch {
            FileHandleOut.error("rlk-bench --child measure \(arguments.joined(separator: " ")): \(error)")
            return 1
        }
    }
}
