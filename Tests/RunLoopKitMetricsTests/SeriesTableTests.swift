import Dispatch
@_spi(RunLoopKitInternals) import RunLoopKitCore
@testable import RunLoopKitMetrics
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

/// A made series: which key it was made for, and an identity.
private final class MadeSeries: Sendable {
    let key: String
    init(key: String) { self.key = key }
}

@Suite("Metrics: the series table under concurrent first looks", .blocksThreads)
struct SeriesTableTests {
    @Test("Metrics: a key looked up first by several threads at once gets one series on all of them, its own or the shared one, and no more keys than the limit get their own")
    func concurrentFirstLooks() {
        let keys = ["a", "b", "c", "d"]
        // Fresh tables, each looked up by three threads at once in three
        // orders of the same keys: the window between a miss and the check
        // for room is a few instructions, so many tables give it many
        // chances (the table before its fix failed it in most runs).
        let orders = [keys, keys.reversed(), Array(keys[2...] + keys[..<2])]
        for round in 0..<20_000 {
            let table = SeriesTable<String, MadeSeries>(limit: (2, "other")) { MadeSeries(key: $0) }
            // A pthread lock (`Locked`), which ThreadSanitizer follows.
            let seen = Locked<[[String: ObjectIdentifier]]>([[:], [:], [:]])
            let start = DispatchSemaphore(value: 0)
            let group = DispatchGroup()
            for side in orders.indices {
                DispatchQueue.global().async(group: group) {
                    start.wait()
                    var got: [String: ObjectIdentifier] = [:]
                    for key in orders[side] { got[key] = ObjectIdentifier(table[key]) }
                    seen.withLock { $0[side] = got }
                }
            }
            for _ in orders { start.signal() }
            #expect(group.wait(timeout: .now() + 60) == .success)
            let all = seen.withLock { $0 }
            let first = all[0]
            for key in keys where all.contains(where: { $0[key] != first[key] }) {
                Issue.record("round \(round): key \(key) got two different series")
                return
            }
            let own = Set(keys.map { table[$0].key }).subtracting(["other"])
            #expect(own.count <= 2, "round \(round): \(own.sorted()) have series of their own")
            // Each key answers as it did the first time.
            #expect(keys.allSatisfy { ObjectIdentifier(table[$0]) == first[$0] })
        }
    }
}
