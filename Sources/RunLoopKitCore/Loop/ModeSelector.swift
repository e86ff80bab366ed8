/// Which modes a queued block may run in, and, for an ordered or
/// cancellable block, its order and request.
///
/// The order and the request ride here, boxed, rather than as fields of
/// `PendingBlock`, so that a plain perform copies, retains and releases
/// nothing for them (docs/performance.md, "Tried and not kept").
enum ModeSelector: Sendable {
    case common
    case single(RunLoop.Mode)
    case list([RunLoop.Mode])
    /// A block queued with `perform(order:inModes:…)`: its modes, order and request.
    case ordered(OrderedBlock)
    /// A job of the loop's executor (S-EXEC-1): it runs in the executor's
    /// modes, which the queue keeps (`BlockQueue.jobModes`). An actor's job
    /// came through the thread's serial executor; a task job through its
    /// task executor (S-EXEC-2), and runs as one.
    case job(UnownedJob)
    case taskJob(UnownedJob)

    init(_ modes: [RunLoop.Mode]) {
        self = modes.count == 1 ? (modes[0] == .common ? .common : .single(modes[0])) : .list(modes)
    }

    /// `isCommon`: whether `mode` is one of the loop's common modes. A job
    /// matches nothing here: the queue matches it against its executor's
    /// modes (`BlockQueue.matches`).
    func matches(_ mode: RunLoop.Mode, isCommon: Bool) -> Bool {
        switch self {
        case .common: return isCommon
        case let .single(only): return only == mode || (only == .common && isCommon)
        case let .list(modes): return modes.contains { $0 == mode || ($0 == .common && isCommon) }
        case let .ordered(ordered): return ordered.modes.matches(mode, isCommon: isCommon)
        case .job, .taskJob: return false
        }
    }
}

/// What an ordered, cancellable block carries beside its body.
final class OrderedBlock: Sendable {
    let modes: ModeSelector
    let order: Int
    let request: PerformRequest

    init(modes: ModeSelector, order: Int, request: PerformRequest) {
        self.modes = modes
        self.order = order
        self.request = request
    }
}
