/// A peer this build of rlk-bench left out (Package.swift says when): the
/// report shows its side as unavailable, with the reason, and the run goes on.
final class NotBuiltPeer: Contender {
    let label: String
    private let reason: String
    var optional: Bool { true }

    init(label: String, reason: String) {
        self.label = label
        self.reason = reason
    }

    func setUp() throws { throw BenchError(reason) }
    func measure() throws -> [Double] { throw BenchError(reason) }
}
