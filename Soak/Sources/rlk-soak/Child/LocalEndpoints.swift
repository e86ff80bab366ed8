import Synchronization

/// The receiving ports alive in this process, which any worker may send to
/// (inproc traffic, thread to thread).
final class LocalEndpoints: Sendable {
    private let endpoints = Mutex([UInt64: Endpoint]())

    func add(_ endpoint: Endpoint) { endpoints.withLock { $0[endpoint.id] = endpoint } }

    /// Removes it; false if it was gone already.
    @discardableResult
    func remove(_ endpoint: Endpoint) -> Bool { endpoints.withLock { $0.removeValue(forKey: endpoint.id) != nil } }

    /// A port of another worker (a worker sending to its own would wait for
    /// room only it can make).
    func random(notOf workerSerial: UInt32, using generator: inout SeededGenerator) -> Endpoint? {
        let candidates = endpoints.withLock { Array($0.values) }.filter { $0.workerSerial != workerSerial }
        return candidates.isEmpty ? nil : candidates[Int(generator.next() % UInt64(candidates.count))]
    }

    func random(using generator: inout SeededGenerator) -> Endpoint? {
        let all = all
        return all.isEmpty ? nil : all[Int(generator.next() % UInt64(all.count))]
    }

    func endpoint(_ id: UInt64) -> Endpoint? { endpoints.withLock { $0[id] } }

    var all: [Endpoint] { endpoints.withLock { $0.values.sorted { $0.id < $1.id } } }
}
