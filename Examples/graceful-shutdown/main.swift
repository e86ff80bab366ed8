// graceful-shutdown: LoopThreads and ports in a swift-service-lifecycle
// ServiceGroup, stopped by SIGTERM as a service manager stops a service. A
// worker thread serves a port registered as "jobs"; a producer thread
// sends it jobs. On SIGTERM the group shuts its services down in reverse
// order: the producer stops after what was queued for it, then the worker
// after the jobs already sent to it, then the process's ports flush what
// they accepted for other processes (within Port.exitBound) and report what
// was lost. Nothing queued is dropped.
//
//   swift run graceful-shutdown            (sends itself SIGTERM after 1,000 jobs)
//   swift run graceful-shutdown --wait &   (waits for one: kill -TERM <its pid>)
import Glibc
import Logging
import RunLoopKit
import RunLoopKitLifecycle
import ServiceLifecycle
import Synchronization

let waitsForSignal: Bool = {
    let arguments = CommandLine.arguments.dropFirst()
    guard arguments.isEmpty || arguments == ["--wait"] else {
        print("usage: graceful-shutdown [--wait]")
        exit(2)
    }
    return !arguments.isEmpty
}()

/// Runs the group until SIGTERM; returns jobs sent and handled, and the flush's report.
func serve() async throws -> (sent: Int, handled: Int, flushed: PortFlushReport?) {
    let worker = LoopThread(name: "worker"), producer = LoopThread(name: "producer")
    let handled = Mutex(0), sent = Mutex(0)
    let flushed = Mutex<PortFlushReport?>(nil)
    let jobs = try Port(transport: .ipc)
    try PortNameServer.register(jobs, name: "jobs-\(getpid())")
    defer { PortNameServer.unregister("jobs-\(getpid())") }
    jobs.setMessageHandler { _ in handled.withLock { $0 += 1 } }

    var logger = Logger(label: "graceful-shutdown")
    logger.logLevel = .notice
    let group = ServiceGroup(
        services: [
            // Shut down last: the ports flush once the loops are done.
            PortFlushService { report in flushed.withLock { $0 = report } },
            LoopThreadService(worker),
            LoopThreadService(producer),
        ],
        gracefulShutdownSignals: [.sigterm], logger: logger)
    let ended = Mutex(false)
    let running = Task {
        defer { ended.withLock { $0 = true } }
        try await group.run()
    }
    // The services start the threads; the group traps SIGTERM before that.
    while !(worker.isRunning && producer.isRunning) {
        // A group that ended first (a service failed): its error is the outcome.
        if ended.withLock({ $0 }) {
            try await running.value
            return (0, 0, nil)
        }
        try await Task.sleep(for: .milliseconds(1))
    }
    try jobs.schedule(on: worker)

    let sendRight = try PortNameServer.lookup("jobs-\(getpid())")
    for number in 0..<1_000 {
        try producer.perform {
            if (try? sendRight.send(msgid: UInt32(number), before: Date() + 5)) != nil { sent.withLock { $0 += 1 } }
        }
    }
    if waitsForSignal {
        // Written at once, not buffered: whoever waits for it may be reading now.
        let ready = "READY pid \(getpid()): kill -TERM \(getpid())\n"
        _ = ready.withCString { write(STDOUT_FILENO, $0, strlen($0)) }
    } else {
        kill(getpid(), SIGTERM)
    }
    try await running.value
    return (sent.withLock { $0 }, handled.withLock { $0 }, flushed.withLock { $0 })
}

/// Serves, prints the outcome, and says whether nothing was lost. (A
/// function, so that no String outlives it in the top-level code's frame,
/// where LeakSanitizer would take it for a leak at exit.)
func serveAndReport() async throws -> Bool {
    let (sent, handled, flushed) = try await serve()
    print("jobs sent: \(sent), handled: \(handled)")
    print("flush: \(flushed.map { "\($0)" } ?? "not run")")
    return sent == 1_000 && handled == sent && flushed?.isEmpty == true
}

exit(try await serveAndReport() ? 0 : 1)
