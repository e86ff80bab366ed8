/// Which modes a queued block may run in.
enum ModeSelector: Sendable {
    case common
    case single(RunLoop.Mode)
    case list([RunLoop.Mode])

    init(_ modes: [RunLoop.Mode]) {
        self = modes.count == 1 ? (modes[0] == .common ? .common : .single(modes[0])) : .list(modes)
    }

    /// `isCommon`: whether `mode` is one of the loop's common modes.
    func matches(_ mode: RunLoop.Mode, isCommon: Bool) -> Bool {
        switch self {
        case .common: return isCommon
        case let .single(only): return only == mode || (only == .common && isCommon)
        case let .list(modes): return modes.contains { $0 == mode || ($0 == .common && isCommon) }
        }
    }
}
