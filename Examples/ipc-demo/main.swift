// ipc-demo: PortMessages between processes. Started alone, it spawns a
// server process and a client process (this same program, with a role):
// the server registers a named port; the client looks the name up, sends
// requests that carry data and port components and a reply port, and prints
// the replies. Both print a short transcript, clean up, and exit 0.
import Dispatch
import Glibc
import RunLoopKit


enum Request: UInt32 {
    case uppercase = 1      // data -> data
    case subscribe = 2      // a port component: the server sends 3 notices to it
    case sum = 3            // data (numbers) -> data
    case shutdown = 99
}

func text(_ message: PortMessage) -> String {
    message.dataComponents.first.map { String(decoding: $0, as: UTF8.self) } ?? ""
}

/// One line straight to fd 1, so that the three processes' lines interleave
/// as they happen even when stdout is a pipe.
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

func log(_ role: String, _ line: String) { say("[\(role) \(getpid())] \(line)") }

// MARK: - Server

func runServer(name: String) throws {
    let loop = RunLoop.current
    let port = try Port(transport: .ipc)
    try PortNameServer.register(port, name: name)
    log("server", "registered port '\(name)' in \(try PortNameServer.directory())")
    port.setMessageHandler { message in
        guard let request = Request(rawValue: message.msgid) else {
            log("server", "unknown msgid \(message.msgid)")
            return
        }
        let deadline = Date() + 5
        do {
            switch request {
            case .uppercase:
                log("server", "uppercase '\(text(message))'")
                try message.replyPort?.send(msgid: message.msgid, components: [.data(Data(text(message).uppercased().utf8))], before: deadline)
            case .subscribe:
                guard case let .port(subscriber)? = message.components.first else { return }
                log("server", "subscribe: got a send right to \(subscriber), sending 3 notices to it")
                for index in 1...3 {
                    try subscriber.send(msgid: 100 + UInt32(index), components: [.data(Data("notice \(index)".utf8))], before: deadline)
                }
                try message.replyPort?.send(msgid: message.msgid, components: [.data(Data("subscribed".utf8))], before: deadline)
            case .sum:
                let numbers = text(message).split(separator: " ").compactMap { Int($0) }
                log("server", "sum of \(numbers)")
                try message.replyPort?.send(msgid: message.msgid, components: [.data(Data("\(numbers.reduce(0, +))".utf8))], before: deadline)
            case .shutdown:
                log("server", "shutdown requested")
                try message.replyPort?.send(msgid: message.msgid, components: [.data(Data("bye".utf8))], before: deadline)
                loop.stop()
            }
        } catch {
            log("server", "reply failed: \(error)")
        }
    }
    try port.schedule(in: loop, forMode: .default)
    loop.runUntilStopped()
    port.invalidate()
    log("server", "port invalidated, name released; exiting")
}

// MARK: - Client

func runClient(name: String) async throws {
    let server = try PortNameServer.lookup(name, timeout: .seconds(10))
    log("client", "looked up '\(name)': \(server)")

    let reply = try server.sendRequest(msgid: Request.uppercase.rawValue, components: [.data(Data("hello, ports".utf8))],
                                       sendTimeout: 5, receiveTimeout: 5)
    log("client", "uppercase -> '\(text(reply))'")

    // A port component: the server gets a send right and sends to it.
    let notices = try Port(transport: .ipc)
    let received = NoticeBox()
    notices.setMessageHandler { message in
        log("client", "notice \(message.msgid): '\(text(message))'")
        if received.add() == 3 { RunLoop.current.stop() }
    }
    try notices.schedule(in: RunLoop.current, forMode: .default)
    let subscribed = try server.sendRequest(msgid: Request.subscribe.rawValue, components: [.port(notices)],
                                            sendTimeout: 5, receiveTimeout: 5)
    log("client", "subscribe -> '\(text(subscribed))'")
    while received.count < 3 { RunLoop.current.run(mode: .default, seconds: 5, returnAfterSourceHandled: true) }
    notices.invalidate()

    // A port that cannot travel: inproc-only ports stay in their process.
    let local = try Port(transport: .inproc)
    do {
        try server.send(msgid: Request.subscribe.rawValue, components: [.port(local)], before: Date() + 1)
    } catch {
        log("client", "as expected, an inproc port cannot go to another process: \(error)")
    }

    let sum = try await server.request(msgid: Request.sum.rawValue, components: [.data(Data("1 2 3 4 5".utf8))], timeout: .seconds(5))
    log("client", "await request(sum 1...5) -> \(text(sum))")

    let bye = try server.sendRequest(msgid: Request.shutdown.rawValue, sendTimeout: 5, receiveTimeout: 5)
    log("client", "shutdown -> '\(text(bye))'; exiting")
}

final class NoticeBox: @unchecked Sendable {
    private var received = 0
    private let lock = DispatchSemaphore(value: 1)
    func add() -> Int { lock.wait(); defer { lock.signal() }; received += 1; return received }
    var count: Int { lock.wait(); defer { lock.signal() }; return received }
}

// MARK: - Parent

func spawn(_ arguments: [String]) -> pid_t {
    var pid: pid_t = 0
    // argv[0] is the program's own name, so that ps and portsniff show
    // "ipc-demo" for the children too, not "exe".
    let argv: [UnsafeMutablePointer<CChar>?] = ([CommandLine.arguments[0]] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let rc = posix_spawn(&pid, "/proc/self/exe", nil, nil, argv, environ)
    guard rc == 0 else {
        say("ipc-demo: posix_spawn failed: \(String(cString: strerror(rc)))")
        exit(1)
    }
    return pid
}

func wait(for pid: pid_t, _ role: String) -> Bool {
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    let exited = status & 0x7f == 0
    let code = (status >> 8) & 0xff
    say("ipc-demo: \(role) (pid \(pid)) \(exited ? "exited with status \(code)" : "was killed by signal \(status & 0x7f)")")
    return exited && code == 0
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "server"?:
    // A refusal (the name is in use, the runtime directory is unsafe) is
    // said plainly, not as a crash.
    do { try runServer(name: arguments[1]) } catch {
        log("server", "failed: \(error)")
        exit(1)
    }
case "client"?:
    do { try await runClient(name: arguments[1]) } catch {
        log("client", "failed: \(error)")
        exit(1)
    }
default:
    let name = "ipc-demo-\(getpid())"
    say("ipc-demo: starting a server and a client process; port name '\(name)'")
    let server = spawn(["server", name])
    let client = spawn(["client", name])
    let clientOK = wait(for: client, "client")
    let serverOK = wait(for: server, "server")
    guard clientOK && serverOK else {
        say("ipc-demo: FAILED")
        exit(1)
    }
    say("ipc-demo: both processes exited cleanly")
}
