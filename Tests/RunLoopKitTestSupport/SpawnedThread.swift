// The one thread wrapper of the tests. Swift Testing runs tests in parallel
// on a shared pool of threads, so run-loop code in a test runs on a thread
// made for it (this one, or a `LoopThread`), never on a pool thread's
// `RunLoop.current`: the thread exits when its body returns and takes its
// loop with it (S-THR-3). Expectations are checked on the test's own thread,
// from what the body returned: `#expect` on a foreign pthread would not be
// attributed to the test.
import Dispatch
import Glibc

/// A pthread started for one test, named at the OS level, that runs `body`
/// once, on a fresh run loop of its own if it asks for one (S-THR-1);
/// `join()` waits for it and returns what `body` returned or threw. The
/// thread's run loop is torn down when the thread exits, before `join()`
/// returns.
package final class SpawnedThread<T: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `result` is written by the thread before it
    // signals `finished` and read only after; `handle` is set once, by init;
    // `joined` is touched only by the one thread that joins.
    private var result: Result<T, any Error>?
    private let finished = DispatchSemaphore(value: 0)
    private var handle = pthread_t()
    private var joined = false
    private let name: String

    /// Starts `body` on a new thread named `name` (Linux keeps 15 bytes of it).
    package init(named name: String = "rlk-test", _ body: @escaping @Sendable () throws -> T) {
        self.name = name
        let start = ThreadStart { [self] in
            setCurrentThreadName(name)
            result = Result { try body() }
            finished.signal()
        }
        let context = Unmanaged.passRetained(start).toOpaque()
        let rc = pthread_create(&handle, nil, { context in
            Unmanaged<ThreadStart>.fromOpaque(context!).takeRetainedValue().entry()
            return nil
        }, context)
        precondition(rc == 0, "pthread_create failed for test thread \(name): \(rc)")
    }

    /// Waits for the thread to end; returns or rethrows its body's outcome.
    /// A body still running after `timeout` seconds (a safety net: the test
    /// runner waits for a test without a limit) fails the test instead; the
    /// thread is then left running, detached.
    package func join(timeout: Double = 300) throws -> T {
        precondition(!joined, "SpawnedThread \(name) joined twice: keep what the first join returned")
        joined = true
        guard finished.wait(timeout: .now() + timeout) == .success else {
            pthread_detach(handle)
            throw TestFailure("the test thread \(name) did not finish within \(timeout) s")
        }
        pthread_join(handle, nil)
        return try result!.get()
    }

    /// Runs `body` on a new thread and waits for it.
    package static func run(
        named name: String = "rlk-test", timeout: Double = 300, _ body: @escaping @Sendable () throws -> T
    ) throws -> T {
        try SpawnedThread(named: name, body).join(timeout: timeout)
    }
}

/// Runs `body` on a new thread, waits until the thread has exited (its loop
/// torn down), and returns what `body` returned.
package func onNewThread<T: Sendable>(
    named name: String = "rlk-test", timeout: Double = 300, _ body: @escaping @Sendable () throws -> T
) throws -> T {
    try SpawnedThread.run(named: name, timeout: timeout, body)
}

/// What a `SpawnedThread` runs; non-generic, because a C function pointer
/// cannot capture a generic parameter.
private final class ThreadStart {
    let entry: () -> Void
    init(_ entry: @escaping () -> Void) { self.entry = entry }
}
