import RunLoopKit

/// The child's workers, a fixed number of them at all times: a retired
/// one is replaced by a new one (a new thread, new ports, a new sender id).
/// Used on the control thread only.
final class WorkerSet: @unchecked Sendable {
    // @unchecked Sendable: used only on the control thread.
    private let context: ChildContext
    private var workers: [Worker] = []

    init(context: ChildContext) { self.context = context }

    var all: [Worker] { workers }

    func startNew() {
        do {
            workers.append(try Worker(serial: context.nextSerial(), context: context))
        } catch {
            context.violations.record("cannot start a worker: \(error)")
        }
    }

    func random(using generator: inout SeededGenerator) -> Worker? {
        workers.isEmpty ? nil : workers[Int(generator.next() % UInt64(workers.count))]
    }

    func worker(serial: UInt32) -> Worker? { workers.first { $0.serial == serial } }

    /// Closes its streams, invalidates its ports and stops its thread
    /// (`stop()` joins it).
    func retire(_ worker: Worker) {
        workers.removeAll { $0 === worker }
        do {
            let named = try worker.onThread { worker.retire() }
            context.announce(removed: named)
        } catch {
            context.violations.record("worker \(Identifiers.describe(worker.senderID)) did not retire: \(error)")
        }
        worker.thread.stop()
    }

    /// Runs `body` on every worker's thread in turn, waiting for each.
    func forEach<T: Sendable>(_ what: String, _ body: @escaping @Sendable (Worker) -> T) -> [T] {
        workers.compactMap { worker in
            do {
                return try worker.onThread { body(worker) }
            } catch {
                context.violations.record("worker \(Identifiers.describe(worker.senderID)) did not answer (\(what)): \(error)")
                return nil
            }
        }
    }
}
