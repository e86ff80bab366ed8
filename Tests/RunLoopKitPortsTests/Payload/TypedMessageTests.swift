// Typed messages on ports (issue 43): sent, requested and handled as
// values, between threads, between processes and over tcp; what a typed
// handler does with a message it cannot take.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) @testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

struct Question: Codable, Sendable, Equatable {
    var text: String
    var copies: Int
    /// Where the answer's extra copies go, if anywhere.
    var extra: Port?
}

struct Answer: Codable, Sendable, Equatable {
    var lines: [String]
    var from: Int32
}

/// A LoopThread whose port answers `Question`s with `Answer`s, sending
/// each extra copy to the question's `extra` port.
final class QuestionServer: Sendable {
    let thread: LoopThread
    let port: Port

    init(_ label: String, transport: Port.Transport = .inproc) throws {
        let (thread, loop) = try makePortLoopThread(label)
        self.thread = thread
        port = try Port(transport: transport)
        port.setRequestHandler(for: Question.self) { question, _ in
            if let extra = question.extra {
                for copy in 0..<question.copies { try? extra.send(Answer(lines: ["extra \(copy)"], from: getpid()), before: Date() + 10) }
            }
            return Answer(lines: Array(repeating: question.text, count: question.copies), from: getpid())
        }
        try port.schedule(in: loop, forMode: .default)
    }

    func close() {
        port.invalidate()
        thread.stop()
    }
}

@Suite("Typed messages on ports (issue 43)", .blocksThreads)
struct TypedMessageTests {
    @Test("a typed request is answered with a typed reply, synchronously and async, in binary and JSON (the reply in the request's encoding); a port inside the question reaches the server as a usable send right")
    func requestAndReply() async throws {
        let server = try QuestionServer("typed-server")
        defer { server.close() }
        let extras = try IPCInbox("typed-extras", transport: .inproc)
        defer { extras.close() }
        // Synchronous requests from a LoopThread stopped before the test
        // ends: a thread's request reply port keeps the last reply's bytes
        // until its next request, and a Data of 15 bytes or more alive at
        // exit reads as a leak to LeakSanitizer (docs/contributing.md).
        let asker = LoopThread(name: "typed-asker")
        try asker.start()
        defer { asker.stop() }
        for encoding in PayloadEncoding.allCases {
            let port = server.port, extra = extras.port
            let answer = try asker.performAndWait {
                try port.sendRequest(Question(text: "hi", copies: 2, extra: extra), as: Answer.self, encoding: encoding,
                                     sendTimeout: 10, receiveTimeout: 10)
            }
            #expect(answer == Answer(lines: ["hi", "hi"], from: getpid()))
            let awaited = try await server.port.request(Question(text: "yo", copies: 1), as: Answer.self, encoding: encoding, timeout: .seconds(10))
            #expect(awaited.lines == ["yo"])
        }
        #expect(await extras.arrival(ofCount: 4))
        #expect(try extras.messages.map { try $0.payload(as: Answer.self).lines } == [["extra 0"], ["extra 1"], ["extra 0"], ["extra 1"]])
        // A reply of another type than asked for is .payload(.wrongType).
        let port = server.port
        #expect {
            try asker.performAndWait {
                try port.sendRequest(Question(text: "x", copies: 1), as: Question.self, sendTimeout: 10, receiveTimeout: 10)
            }
        } throws: { error in
            guard case let .payload(.wrongType(expected, found))? = error as? PortError else { return false }
            return expected.hasSuffix("Question") && found.hasSuffix("Answer")
        }
    }

    @Test("S-PORT-7: a typed handler drops and counts what it cannot take (another type, no payload, another version, undecodable bytes) and takes the next good message, in order")
    func typedHandlerDrops() throws {
        let (thread, loop) = try makePortLoopThread("typed-drops")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let taken = Locked<[String]>([])
        port.setMessageHandler(for: Question.self) { question, message in
            taken.withLock { $0.append("\(message.msgid):\(question.text)") }
        }
        try port.schedule(in: loop, forMode: .default)

        var otherVersion = Array(try PortMessage(payload: Question(text: "v", copies: 1)).dataComponents[0])
        otherVersion[4] = 7
        var cut = Array(try PortMessage(payload: Question(text: "cut", copies: 1)).dataComponents[0])
        cut.removeLast(3)
        try port.send(Question(text: "one", copies: 1), msgid: 1, before: Date() + 10)
        try port.send(Answer(lines: [], from: 0), msgid: 2, before: Date() + 10)
        try port.send(msgid: 3, components: [.data(Data("plain bytes".utf8))], before: Date() + 10)
        try port.send(msgid: 4, components: [.data(Data(otherVersion))], before: Date() + 10)
        try port.send(msgid: 5, components: [.data(Data(cut))], before: Date() + 10)
        try port.send(Question(text: "two", copies: 1), msgid: 6, encoding: .json, before: Date() + 10)
        #expect(waitUntil(timeout: 30) { taken.value.count == 2 })
        #expect(taken.value == ["1:one", "6:two"])
        let drops = port.dropCounts
        #expect(drops[.wrongPayloadType] == 2 && drops[.unsupportedPayloadVersion] == 1 && drops[.undecodablePayload] == 1, "\(drops)")
    }

    @Test("between processes over ipc: a child's typed request with its own port inside is answered; the extra copies reach the child's port")
    func acrossProcesses() async throws {
        let name = PortProcess.uniqueName("typed")
        let server = try QuestionServer("typed-ipc-server", transport: .ipc)
        defer {
            server.close()
            PortProcess.removeNameFiles(name)
        }
        try PortNameServer.register(server.port, name: name)
        let parentPID = getpid()
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String, parentPID = parentPID as Int32] in
            await PortChild.run {
                let server = try PortNameServer.lookup(name, timeout: .seconds(30))
                let extras = try IPCInbox("child-extras")
                defer { extras.close() }
                // Async: its reply port goes with the request, so no reply's
                // bytes are alive at exit (LeakSanitizer, docs/contributing.md).
                let answer = try await server.request(Question(text: "far", copies: 3, extra: extras.port), as: Answer.self,
                                                      timeout: .seconds(30))
                PortChild.check(answer == Answer(lines: ["far", "far", "far"], from: parentPID), "answer \(answer)")
                PortChild.check(extras.wait(forCount: 3), "the extras did not come")
                let lines = try extras.messages.map { try $0.payload(as: Answer.self) }
                PortChild.check(lines.map(\.lines) == [["extra 0"], ["extra 1"], ["extra 2"]] && lines.allSatisfy { $0.from == parentPID }, "\(lines)")
            }
        }
        ChildOutput(result).expectSuccess()
    }

    struct Ticket: Codable, Sendable {
        var seat: String
        var holders: [Port]
    }

    @Test("over tcp to another process: a typed request whose value holds this process's ports comes back (an echo) with those ports as the very same objects")
    func overTCP() async throws {
        let peer = try NetworkPeerProcess.serve(child: 0)
        defer { peer.stop() }
        let remote = try peer.sendRight()
        let mine = try IPCInbox("typed-tcp-mine", transport: TCPPortTests.loopback)
        defer { mine.close() }
        let ticket = Ticket(seat: "12A", holders: [mine.port, mine.port])
        // On a LoopThread: awaited on the cooperative pool, a request came
        // after the peer's own 120 s limit in a loaded sanitizer run.
        let answers = try await onLoopThread("typed-tcp-driver") { _ in
            var answers: [Ticket] = []
            for encoding in PayloadEncoding.allCases {
                answers.append(try await remote.request(ticket, msgid: 1, as: Ticket.self, encoding: encoding, timeout: .seconds(20)))
            }
            return answers
        }
        #expect(answers.count == PayloadEncoding.allCases.count)
        for back in answers {
            #expect(back.seat == "12A" && back.holders.count == 2 && back.holders.allSatisfy { $0 === mine.port })
        }
    }

    @Test("a value that cannot be encoded fails the send with .payload(.valueNotEncodable) and sends nothing")
    func notEncodable() throws {
        struct Refuses: Encodable, Sendable {
            func encode(to encoder: any Encoder) throws {
                throw EncodingError.invalidValue(0, EncodingError.Context(codingPath: encoder.codingPath, debugDescription: "never"))
            }
        }
        let inbox = try InboxPort("typed-refuses")
        defer { inbox.close() }
        #expect {
            try inbox.port.send(Refuses(), before: Date() + 1)
        } throws: { error in
            guard case .payload(.valueNotEncodable)? = error as? PortError else { return false }
            return true
        }
        try inbox.port.send(msgid: 9, before: Date() + 10)
        #expect(inbox.inbox.waitForCount(1))
        #expect(inbox.inbox.messages.map(\.msgid) == [9], "nothing of the refused value was sent")
    }
}
