import Synchronization

/// Every broken guarantee a child sees (a duplicate, a reordering, a gap, a
/// marker that does not match, an unexpected error): counted, the first
/// few kept word for word, and printed on stderr as they happen.
final class ViolationLog: Sendable {
    private static let keptSamples = 20
    private let state = Mutex((count: 0, samples: [String]()))
    private let prefix: String

    init(prefix: String) { self.prefix = prefix }

    func record(_ description: String) {
        let isSample = state.withLock { state in
            state.count += 1
            guard state.samples.count < Self.keptSamples else { return false }
            state.samples.append(description)
            return true
        }
        if isSample { Console.warn("\(prefix) VIOLATION: \(description)") }
    }

    var count: Int { state.withLock { $0.count } }
    var samples: [String] { state.withLock { $0.samples } }
}
