import FoundationEssentials
import Glibc
import Testing
import ZeroMQ
import RunLoopKitTestSupport

/// One owner thread per socket, checked by assertions in debug builds (docs/design.md: "every
/// socket has one owner at a time"). Each case runs in a child process, so that a failed
/// assertion ends that process and not the test run.
@Suite(.blocksThreads) struct OwnershipTests {
    #if DEBUG
    @Test func usingASocketOnASecondThreadFailsTheAssertion() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let socket = try ZMQContext.shared.makeSocket(.pair)
            try socket.bind("inproc://ownership-violation")  // this thread owns it now
            runOnNewThread {
                _ = try? socket.send("from the wrong thread", dontWait: true)
            }
        }
        let output = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(output.contains("ZeroMQ socket pair used on thread "))
        #expect(output.contains(" while owned by thread "))
        #expect(output.contains(
            "libzmq sockets are not thread-safe; call releaseOwnership() on the owner thread to hand it over"))
    }

    @Test func releasingOnAnotherThreadThanTheOwnerFailsTheAssertion() async {
        await #expect(processExitsWith: .failure) {
            let socket = try ZMQContext.shared.makeSocket(.push)
            _ = try socket.linger
            runOnNewThread { socket.releaseOwnership() }
        }
    }

    @Test func releasedSocketMovesToAnotherThreadAndBack() async {
        await #expect(processExitsWith: .success) {
            let endpoint = "inproc://ownership-handover"
            let receiver = try ZMQContext.shared.makeSocket(.pull)
            let sender = try ZMQContext.shared.makeSocket(.push)
            defer { receiver.close(); sender.close() }
            try receiver.bind(endpoint)
            try sender.connect(endpoint)
            try sender.send("from the first owner")
            sender.releaseOwnership()
            runOnNewThread {
                try! sender.send("from the second owner")
                sender.releaseOwnership()
            }
            try sender.send("from the first owner again")
            let message = Message()
            var texts: [String] = []
            while try receiver.receive(into: message, dontWait: true) {
                texts.append(message.withUnsafeBytes { String(decoding: $0, as: UTF8.self) })
            }
            guard texts == ["from the first owner", "from the second owner", "from the first owner again"] else {
                fatalError("unexpected messages: \(texts)")
            }
        }
    }

    @Test func aNewSocketBelongsToTheFirstThreadThatUsesIt() async {
        await #expect(processExitsWith: .success) {
            // Made here, but never used here: the other thread may take it.
            let socket = try ZMQContext.shared.makeSocket(.pair)
            runOnNewThread {
                try! socket.bind("inproc://ownership-first-use")
                socket.releaseOwnership()
            }
            _ = try socket.linger
        }
    }

    @Test func closeIsAllowedFromAnyThreadAndClearsTheOwner() async {
        await #expect(processExitsWith: .success) {
            let socket = try ZMQContext.shared.makeSocket(.pair)
            try socket.bind("inproc://ownership-close")
            runOnNewThread {
                socket.close()
                // The closed socket answers ENOTSOCK on any thread instead of failing
                // the ownership assertion.
                do throws(ZMQError) {
                    try socket.send("x")
                    fatalError("send on a closed socket succeeded")
                } catch {
                    guard error.code == ENOTSOCK else { fatalError("\(error)") }
                }
            }
            guard socket.isClosed else { fatalError("not closed") }
        }
    }
    #else
    @Test func optimizedBuildsCompileTheCheckOut() throws {
        // The check sits inside `assert`, so with -O a second thread passes unchecked.
        // (Safe here: the join orders the two threads' uses.)
        let (receiver, sender) = try connectedSockets(.pull, .push, label: "unchecked")
        defer { receiver.close(); sender.close() }
        try sender.send("owner")
        runOnNewThread { try! sender.send("intruder") }
        let message = Message()
        #expect(try receiver.receive(into: message, dontWait: true))
        #expect(try receiver.receive(into: message, dontWait: true))
        #expect(message.string == "intruder")
    }
    #endif

    @Test func socketUsedOnOneThreadAtATimeWorksAcrossHandovers() throws {
        // In-process too: a chain of threads, each releasing before the next takes over.
        let (receiver, sender) = try connectedSockets(.pull, .push, label: "relay")
        defer { receiver.close(); sender.close() }
        sender.releaseOwnership()
        for i in 0..<8 {
            runOnNewThread {
                try! sender.send("hop \(i)")
                sender.releaseOwnership()
            }
        }
        let message = Message()
        for i in 0..<8 {
            #expect(try receiver.receive(into: message, dontWait: true))
            #expect(message.string == "hop \(i)")
        }
    }
}
