import CBenchPeers
import Dispatch
import Glibc

/// Plain threads (no run loop) that run one piece of work each per batch,
/// started all at once: the senders of a fan-in. Made once (set-up), so that
/// a timed batch never includes creating a thread; each waits on its own
/// semaphore between batches.
///
/// @unchecked Sendable: `work` and `failures` are written by the measuring
/// thread only while every sender waits on its semaphore, and read by the
/// senders only after that semaphore was signalled (which orders the
/// writes before); each sender writes only its own slot of `failures`,
/// read by the measuring thread after `finished` was signalled by all.
final class SenderThreads: @unchecked Sendable {
    let count: Int
    private let cpu: Int32
    private var threads: [pthread_t] = []
    private let go: [DispatchSemaphore]
    private let finished = DispatchSemaphore(value: 0)
    private var work: (@Sendable (Int) throws -> Void)?
    private var failures: [String?]
    private var quitting = false

    /// `count` threads, each pinned to `cpu` (-1: anywhere) once started.
    init(count: Int, cpu: Int32) {
        self.count = count
        self.cpu = cpu
        go = (0..<count).map { _ in DispatchSemaphore(value: 0) }
        failures = Array(repeating: nil, count: count)
    }

    func start() throws {
        for index in 0..<count {
            let context = Unmanaged.passRetained(SenderContext(owner: self, index: index)).toOpaque()
            var thread = pthread_t()
            let result = pthread_create(&thread, nil, { argument in
                let context = Unmanaged<SenderContext>.fromOpaque(argument!).takeRetainedValue()
                context.owner.serve(context.index)
                return nil
            }, context)
            guard result == 0 else {
                Unmanaged<SenderContext>.fromOpaque(context).release()
                stop()
                throw BenchError("pthread_create failed: \(String(cString: strerror(result)))")
            }
            threads.append(thread)
        }
    }

    private func serve(_ index: Int) {
        _ = bench_pin_thread(0, cpu)
        bench_set_thread_name("bench-send-\(index)")
        while true {
            go[index].wait()
            if quitting { return }
            do { try work?(index) } catch { failures[index] = "sender \(index): \(error)" }
            finished.signal()
        }
    }

    /// Hands `work` to every thread at once (each gets its index) and waits
    /// until all have returned; returns the monotonic time just before the
    /// first was released. Throws the first sender's error, or after `timeout`.
    func run(timeout: Double, _ work: @escaping @Sendable (Int) throws -> Void) throws -> UInt64 {
        self.work = work
        for index in 0..<count { failures[index] = nil }
        let start = monotonicNanoseconds()
        for semaphore in go { semaphore.signal() }
        for done in 0..<count {
            if finished.wait(timeout: .now() + timeout) == .timedOut {
                throw BenchError("timed out after \(timeout) s waiting for \(count - done) of \(count) sender threads")
            }
        }
        if let failure = failures.compactMap({ $0 }).first { throw BenchError(failure) }
        return start
    }

    /// Ends and joins the threads (after the batch in progress, if any).
    func stop() {
        quitting = true
        for semaphore in go.prefix(threads.count) { semaphore.signal() }
        for thread in threads { pthread_join(thread, nil) }
        threads = []
    }
}

/// What a sender thread is started with.
private final class SenderContext {
    let owner: SenderThreads
    let index: Int
    init(owner: SenderThreads, index: Int) {
        self.owner = owner
        self.index = index
    }
}
