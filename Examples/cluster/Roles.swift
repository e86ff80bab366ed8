// The roles' code sees RunLoopKit's Port, not Foundation's (which main.swift
// and Hosts.swift import for Process): this file does not import Foundation.
import Glibc
import RunLoopKit

/// What the cluster's processes say to each other (their msgids).
enum Msgid {
    /// To the directory: a worker's port (a port component) and its name (data).
    static let register: UInt32 = 1
    /// To the directory: answered with every worker's port, as port components.
    static let list: UInt32 = 2
    /// To a worker: a number (data); answered with "<worker>: <its square>".
    static let square: UInt32 = 3
}

func text(_ message: PortMessage) -> String {
    message.dataComponents.first.map { String(decoding: $0, as: UTF8.self) } ?? ""
}

/// One line straight to fd 1, so that the processes' lines interleave as
/// they happen even when standard output is a pipe.
func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// Blocks until SIGTERM (at most ten minutes), then returns.
func waitForTermination() {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGTERM)
    var limit = timespec(tv_sec: 600, tv_nsec: 0)
    _ = sigtimedwait(&signals, nil, &limit)
}

/// SIGTERM is read by `waitForTermination`: blocked before any thread starts.
func blockTermination() {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGTERM)
    pthread_sigmask(SIG_BLOCK, &signals, nil)
}

enum Roles {
    /// `cluster key`: this host's public key, the key pair made on first use.
    static func key() throws {
        say(try NetworkKeys.publicKeyText)
    }

    /// `cluster directory <bind> <port>`: a tcp port registered as
    /// "directory", served over tcp by this process's name service, where
    /// workers register and clients ask for the workers.
    static func directory(bind: String, port tcpPort: UInt16) throws {
        blockTermination()
        let thread = LoopThread(name: "directory")
        try thread.start()
        let port = try Port(transport: .tcp(.listening(on: bind, port: tcpPort)))
        // Touched on the directory's loop thread only.
        nonisolated(unsafe) var workers: [(name: String, port: Port)] = []
        port.setMessageHandler { message in
            switch message.msgid {
            case Msgid.register:
                guard case let .port(worker)? = message.components.first else { return }
                workers.removeAll { !$0.port.isValid }
                workers.append((text(message), worker))
                say("[directory] \(text(message)) registered, at \(worker.transport)")
                try? message.replyPort?.send(msgid: Msgid.register, before: Date() + 5)
            case Msgid.list:
                workers.removeAll { !$0.port.isValid }
                try? message.replyPort?.send(msgid: Msgid.list, components: workers.map { .port($0.port) }, before: Date() + 5)
            default:
                break
            }
        }
        try port.schedule(on: thread)
        try PortNameServer.register(port, name: "directory")
        say("[directory] serving the name 'directory' at \(port.transport)")
        say("READY")
        waitForTermination()
        port.invalidate()
        thread.stop()
    }

    /// `cluster worker <name> <bind> <directory endpoint> <directory key>`:
    /// a tcp port that squares numbers, registered with the directory,
    /// found by name at the directory's endpoint.
    static func worker(name: String, bind: String, directory endpoint: String, key: String) throws {
        blockTermination()
        let thread = LoopThread(name: name)
        try thread.start()
        let port = try Port(transport: .tcp(.listening(on: bind)))
        port.setMessageHandler { message in
            let number = Int(text(message)) ?? 0
            try? message.replyPort?.send(msgid: Msgid.square, components: [.data(Data("\(name): \(number * number)".utf8))], before: Date() + 5)
        }
        try port.schedule(on: thread)
        let directory = try PortNameServer.lookup("directory", at: endpoint, server: .curve(publicKey: key))
        try thread.performAndWait {
            _ = try directory.sendRequest(msgid: Msgid.register, components: [.port(port), .data(Data(name.utf8))], sendTimeout: 5, receiveTimeout: 5)
        }
        say("[\(name)] registered with the directory at \(endpoint)")
        say("READY")
        waitForTermination()
        port.invalidate()
        thread.stop()
    }

    /// `cluster client <directory endpoint> <directory key> <workers> <requests>`:
    /// looks the directory up by name, asks it for the workers (until
    /// `workers` are there), sends every worker its share of `requests`
    /// at once, and gathers the replies.
    static func client(directory endpoint: String, key: String, workers wanted: Int, requests: Int) async throws {
        let directory = try PortNameServer.lookup("directory", at: endpoint, server: .curve(publicKey: key))
        var workers: [Port] = []
        let deadline = Date() + 30
        while workers.count < wanted {
            guard Date() < deadline else { throw PortError.timedOut(TimeoutError(operation: "waiting for \(wanted) workers", limit: .seconds(30))) }
            let reply = try await directory.request(msgid: Msgid.list, timeout: .seconds(5))
            workers = reply.components.compactMap { if case let .port(port) = $0 { port } else { nil } }
            if workers.count < wanted { try await Task.sleep(for: .milliseconds(100)) }
        }
        say("[client] the directory knows \(workers.count) workers")
        let started = ContinuousClock.now
        let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
            for number in 1...requests {
                let worker = workers[number % workers.count]
                group.addTask {
                    let reply = try await worker.request(msgid: Msgid.square, components: [.data(Data("\(number)".utf8))], timeout: .seconds(10))
                    return (number, text(reply))
                }
            }
            var answers: [(Int, String)] = []
            for try await answer in group { answers.append(answer) }
            return answers
        }
        let elapsed = ContinuousClock.now - started
        var perWorker: [String: Int] = [:]
        var sum = 0
        for (number, answer) in answers {
            let parts = answer.split(separator: ":")
            guard parts.count == 2, Int(parts[1].drop { $0 == " " }) == number * number else {
                throw PortError.invalidPort("a wrong answer for \(number): \(answer)")
            }
            perWorker[String(parts[0]), default: 0] += 1
            sum += number * number
        }
        for (name, count) in perWorker.sorted(by: { $0.key < $1.key }) { say("[client] \(name) answered \(count)") }
        say("[client] \(answers.count) of \(requests) answers, sum of squares \(sum), in \(elapsed)")
    }
}
