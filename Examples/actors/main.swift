// actors: two actors, each pinned to a LoopThread of its own (S-EXEC-1),
// exchange PortMessages. Each port is scheduled on its actor's thread, so
// its handler runs there, inside the actor's isolation (`assumeIsolated`):
// the actor's state needs no lock, whether a message or an actor call
// changes it. A task that prefers a thread (S-EXEC-2) runs there too.
// Prints what ran where, and exits 0.
import RunLoopKit
import Dispatch
import Glibc

/// Counts the messages that reach its port; answers each on its reply port.
actor Counter {
    let thread: LoopThread
    nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }
    let port: Port
    private(set) var received = 0
    private var threadsSeen: Set<String> = []

    init(on thread: LoopThread) throws {
        self.thread = thread
        port = try Port(transport: .inproc)
    }

    /// Starts receiving: the handler runs on the thread, isolated to this actor.
    func listen(answering: Bool) throws {
        port.setMessageHandler { [self] message in
            assumeIsolated { counter in
                counter.count(message, answering: answering)
            }
        }
        try port.schedule(on: thread)
    }

    private func count(_ message: PortMessage, answering: Bool) {
        received += 1
        threadsSeen.insert(LoopThread.currentName ?? "?")
        if answering, let reply = message.replyPort {
            try? reply.send(msgid: message.msgid + 1000, components: message.components, before: .now + 1)
        }
    }

    /// Sends `count` messages to `peer`, each with this actor's port to answer on.
    func send(_ count: Int, to peer: Port) throws {
        for index in 0..<count {
            try peer.send(msgid: UInt32(index), components: [.data(Data("hello \(index)".utf8))], replyPort: port, before: .now + 1)
        }
    }

    func report() -> (received: Int, threads: [String]) { (received, threadsSeen.sorted()) }
}

let left = LoopThread(name: "left")
let right = LoopThread(name: "right")
try left.start()
try right.start()

let sender = try Counter(on: left)
let echo = try Counter(on: right)

let done = DispatchSemaphore(value: 0)
// Detached: top-level code is the main actor's, and the main thread waits below.
Task.detached {
    do {
        try await echo.listen(answering: true)
        try await sender.listen(answering: false)
        try await sender.send(100, to: echo.port)
        // Wait for the answers, on the left thread between its messages.
        while await sender.received < 100 { try await Task.sleep(for: .milliseconds(1)) }
        let (sent, senderThreads) = await sender.report()
        let (echoed, echoThreads) = await echo.report()
        print("right's actor got \(echoed) messages on \(echoThreads); left's actor got \(sent) answers on \(senderThreads)")
        // Nonisolated code that prefers a thread runs there.
        let whereItRan = await withTaskExecutorPreference(right) { LoopThread.currentName ?? "?" }
        print("a task preferring 'right' ran on '\(whereItRan)'")
    } catch {
        print("actors: \(error)")
        exit(1)
    }
    done.signal()
}
done.wait()
sender.port.invalidate()
echo.port.invalidate()
left.stop()
right.stop()
