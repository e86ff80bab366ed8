// actors: two actors, each pinned to a LoopThread of its own (S-EXEC-1),
// exchange PortMessages. Each port is scheduled on its actor's thread, so
// its handler runs there, inside the actor's isolation (`assumeIsolated`):
// the actor's state needs no lock, whether a message or an actor call
// changes it. A task that prefers a thread (S-EXEC-2) runs there too.
//
// Meanwhile the main thread runs RunLoop.main, which serves
// DispatchQueue.main and so the main actor (S-EXEC-3): the @MainActor task
// that drives the actors runs there between a RunLoopKit timer, a port
// that the actor on 'right' feeds, and a block queued on DispatchQueue.main
// from another thread. Prints what ran where, and exits 0.
import RunLoopKit
import Dispatch
import Glibc
import Synchronization

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

/// The LoopThread that nonisolated async code runs on.
nonisolated func nameOfThisThread() async -> String { LoopThread.currentName ?? "not a LoopThread" }

/// What ran on the main thread, and on which thread it ran.
@Sendable func note(_ what: String) { print("\(what) ran on '\(RunLoop.current.threadName)'") }

// The main thread's own sources: a port that the actor on 'right' will
// send to, and a timer that fires three times.
let mainPort = try Port(transport: .inproc)
let portMessages = Atomic<Int>(0)
mainPort.setMessageHandler { message in
    portMessages.add(1, ordering: .relaxed)
    note("main's port handler (message \(message.msgid) from 'right')")
}
try mainPort.schedule(in: RunLoop.main, forMode: .common)
let timerFires = Atomic<Int>(0)
let timer = try Timer(timeInterval: 0.01, repeats: true) { timer in
    let fire = timerFires.add(1, ordering: .relaxed).newValue
    note("a RunLoopKit timer (fire \(fire) of 3)")
    if fire == 3 { timer.invalidate() }
}
RunLoop.main.add(timer, forMode: .common)
DispatchQueue.global().async {
    DispatchQueue.main.async { note("a DispatchQueue.main block queued from a Dispatch thread") }
}

let finished = Atomic<Bool>(false)
// A main-actor task: it runs on the main thread whenever RunLoop.main
// drains the main queue, and awaits the actors on their threads.
Task { @MainActor in
    do {
        note("the @MainActor task")
        try await echo.listen(answering: true)
        try await sender.listen(answering: false)
        try await sender.send(100, to: echo.port)
        // Wait for the answers, on the left thread between its messages.
        while await sender.received < 100 { try await Task.sleep(for: .milliseconds(1)) }
        let (sent, senderThreads) = await sender.report()
        let (echoed, echoThreads) = await echo.report()
        print("right's actor got \(echoed) messages on \(echoThreads); left's actor got \(sent) answers on \(senderThreads)")
        // Nonisolated code that prefers a thread runs there (this closure
        // is the main actor's, as its caller is; the function it calls is not).
        let whereItRan = await withTaskExecutorPreference(right) { await nameOfThisThread() }
        print("a task preferring 'right' ran on '\(whereItRan)'")
        // The actor on 'right' sends to the main thread's port.
        try await echo.send(1, to: mainPort)
        note("the @MainActor task, after its awaits,")
    } catch {
        print("actors: \(error)")
        exit(1)
    }
    finished.store(true, ordering: .releasing)
}

// The main thread runs its loop until the task is done and the timer and
// the port have had their turns.
let deadline = Date(timeIntervalSinceNow: 30)
while !finished.load(ordering: .acquiring) || timerFires.load(ordering: .relaxed) < 3
    || portMessages.load(ordering: .relaxed) < 1 {
    guard Date() < deadline else { print("actors: not done within 30 s"); exit(1) }
    RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.05))
}
mainPort.invalidate()
sender.port.invalidate()
echo.port.invalidate()
left.stop()
right.stop()
