// Ports within one process: what a message carries, intact, within the
// limits (S-PORT-2), and ports arriving as send rights to the original
// (S-PORT-3).
// The cross-process parts (ipc between processes, names, peer death) are in
// Transport/, Naming/ and Lifetime/; requests in PortRequestTests; the
// bytes on the wire in Wire/.
import Dispatch
import Glibc
import Synchronization
import Testing
import ZeroMQ
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("Ports in one process: messages and the ports in them (S-PORT-2, S-PORT-3)", .blocksThreads)
struct PortMessageTests {
    // MARK: - S-PORT-2

    @Test("S-PORT-2: msgid, data components (empty, small, 1 MB), port components and the reply port arrive intact; sendPort is the receiving port")
    func messageArrivesIntact() throws {
        let (thread, loop) = try makePortLoopThread("p2-intact")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        let other = try Port(transport: .inproc)
        let ipcPort = try Port(transport: .ipc)
        let replies = try Port(transport: .inproc)
        defer { for each in [port, other, ipcPort, replies] { each.invalidate() } }
        let inbox = PortInbox()
        port.setMessageHandler(inbox.handler)
        try port.schedule(in: loop, forMode: .default)

        // PortMessage.Component has two cases, .data and .port: nothing else
        // can be put in a message, which the compiler enforces (S-PORT-2).
        let megabyte = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })
        let components: [PortMessage.Component] = [
            .data(Data()), .data(Data("hello".utf8)), .port(other), .data(megabyte), .port(ipcPort), .data(Data([0])),
        ]
        try port.send(msgid: .max, components: components, replyPort: replies, before: portDeadline())
        try port.send(msgid: 0, before: portDeadline())
        try PortMessage(msgid: 77, components: [.port(port)], sendPort: port).send(before: portDeadline())
        #expect(inbox.waitForCount(3))
        let received = inbox.messages
        try #require(received.count == 3)

        let first = received[0]
        #expect(first.msgid == .max)
        #expect(first.components.count == components.count)
        #expect(first.dataComponents == [Data(), Data("hello".utf8), megabyte, Data([0])])
        #expect(first.components == components)
        if case let .port(arrived)? = first.components.dropFirst(2).first { #expect(arrived === other) } else { Issue.record("component 2 is not a port") }
        if case let .port(arrived)? = first.components.dropFirst(4).first {
            #expect(arrived === ipcPort)
            #expect(arrived.transport == .ipc)
        } else {
            Issue.record("component 4 is not a port")
        }
        #expect(first.replyPort === replies)
        // S-PORT-3, as NSPortMessage documents for a received message.
        #expect(first.sendPort === replies, "sendPort is where replies go")
        #expect(first.receivePort === port, "receivePort is the port it arrived on")
        #expect(first.isIncoming)

        let second = received[1]
        #expect(second.msgid == 0)
        #expect(second.components.isEmpty)
        #expect(second.replyPort == nil && second.sendPort == nil)
        #expect(second.receivePort === port)

        let third = received[2]
        #expect(third.msgid == 77)
        if case let .port(arrived)? = third.components.first { #expect(arrived === port) } else { Issue.record("no port component") }
        #expect(port.droppedMessageCount == 0)
    }

    @Test("S-PORT-2: what a handler keeps (a message, or one of its Data) stays as it arrived while later messages reuse the receiver's buffers; components change kind and number from message to message")
    func keptComponentsStayIntact() throws {
        // The receiver refills the last message's buffers in place once its
        // handler has let them go (docs/performance.md); this proves that it
        // never writes over bytes someone still holds.
        @Sendable func bytes(_ seed: UInt32, _ count: Int = 64) -> Data {
            Data((0..<count).map { UInt8(truncatingIfNeeded: Int(seed) &* 7 &+ $0) })
        }
        let other = try Port(transport: .inproc)
        defer { other.invalidate() }
        // msgid → what it carries; every third keeps its Data, every fifth the whole message.
        @Sendable func components(_ msgid: UInt32) -> [PortMessage.Component] {
            switch msgid % 4 {
            case 0: [.data(bytes(msgid))]
            case 1: [.data(bytes(msgid)), .data(bytes(msgid &+ 1000))]
            case 2: [.port(other), .data(bytes(msgid))]
            default: [.data(bytes(msgid, 65))]
            }
        }
        let seen = Locked<(delivered: Int, mismatches: [UInt32], keptData: [(UInt32, Data)], keptMessages: [PortMessage])>((0, [], [], []))
        try onNewThread {
            let port = try Port(transport: .inproc)
            port.setMessageHandler { message in
                seen.withLock { state in
                    state.delivered += 1
                    if message.components != components(message.msgid) { state.mismatches.append(message.msgid) }
                    if message.msgid % 3 == 0, case let .data(data)? = message.components.last {
                        state.keptData.append((message.msgid, data))
                    }
                    if message.msgid % 5 == 0 { state.keptMessages.append(message) }
                }
            }
            try port.schedule(in: RunLoop.current, forMode: .default)
            for msgid in UInt32(1)...200 { try port.send(msgid: msgid, components: components(msgid), before: portDeadline()) }
            let deadline = portDeadline()
            while seen.withLock({ $0.delivered }) < 200, Date() < deadline { _ = RunLoop.current.run(mode: .default, seconds: 0.1) }
            port.invalidate()
        }
        seen.withLock { state in
            #expect(state.delivered == 200)
            #expect(state.mismatches.isEmpty, "handlers saw wrong components for \(state.mismatches)")
            #expect(state.keptData.count == 66)
            for (msgid, data) in state.keptData {
                #expect(data == components(msgid).last.map { if case let .data(d) = $0 { d } else { Data() } }, "kept data of \(msgid)")
            }
            #expect(state.keptMessages.count == 40)
            for message in state.keptMessages {
                #expect(message.components == components(message.msgid), "kept message \(message.msgid)")
            }
        }
    }

    @Test("S-PORT-2: past the limits (257 components, a 64 MiB + 1 frame, 320 MiB in all) send throws .messageTooLarge and sends nothing; 256 components arrive")
    func limits() throws {
        let fixture = try InboxPort("p2-limits")
        defer { fixture.close() }
        let (port, inbox) = (fixture.port, fixture.inbox)

        let tooMany = Array(repeating: PortMessage.Component.data(Data([1])), count: WireFormat.maxComponents + 1)
        #expect(portErrorThrown { try port.send(msgid: 1, components: tooMany, before: portDeadline()) }?.caseName == "messageTooLarge")
        let tooManyPorts = Array(repeating: PortMessage.Component.port(port), count: WireFormat.maxComponents + 1)
        #expect(portErrorThrown { try port.send(msgid: 1, components: tooManyPorts, before: portDeadline()) }?.caseName == "messageTooLarge")
        let bigFrame = Data(count: WireFormat.maxFrameBytes + 1)  // calloc'd: costs no memory until touched
        #expect(portErrorThrown { try port.send(msgid: 1, components: [.data(bigFrame)], before: portDeadline()) }?.caseName == "messageTooLarge")
        let fullFrame = Data(count: WireFormat.maxFrameBytes)
        let tooMuch = Array(repeating: PortMessage.Component.data(fullFrame), count: 5)
        #expect(portErrorThrown { try port.send(msgid: 1, components: tooMuch, before: portDeadline()) }?.caseName == "messageTooLarge")

        let most = (0..<WireFormat.maxComponents).map { index in
            index.isMultiple(of: 16) ? PortMessage.Component.port(port) : .data(Data([UInt8(truncatingIfNeeded: index)]))
        }
        try port.send(msgid: 2, components: most, before: portDeadline())
        #expect(inbox.waitForCount(1))
        #expect(inbox.msgids == [2])
        #expect(inbox.messages.first?.components == most)
        #expect(port.droppedMessageCount == 0)
    }

    @Test("S-PORT-2, S-PORT-4: frames adding up to exactly 256 MiB arrive; 256 MiB of data plus its header is refused at send time, never dropped by the receiver")
    func totalSizeBoundary() throws {
        let (thread, loop) = try makePortLoopThread("p2-total")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let sizes = Locked<[[Int]]>([])
        let arrived = DispatchSemaphore(value: 0)
        port.setMessageHandler { message in  // keeps only the sizes, not 256 MiB
            sizes.withLock { $0.append([Int(message.msgid)] + message.dataComponents.map(\.count)) }
            arrived.signal()
        }
        try port.schedule(in: loop, forMode: .default)
        try port.send(msgid: 1, before: portDeadline())
        #expect(arrived.wait(timeout: .now() + 30) == .success)

        // docs/wire-format.md: "all frames of one message together: 268,435,456 bytes".
        let headerSize = WireFormat.headerFixedSize + 4
        let frame = Data(count: WireFormat.maxFrameBytes)
        let overLimit = Array(repeating: PortMessage.Component.data(frame), count: 4)  // 256 MiB of data + 16 header bytes
        let error = portErrorThrown { try port.send(msgid: 2, components: overLimit, before: portDeadline(30)) }
        #expect(error?.caseName == "messageTooLarge", "a message the receiver must drop was accepted")
        let last = Data(count: WireFormat.maxFrameBytes - headerSize)
        try port.send(msgid: 3, components: [.data(frame), .data(frame), .data(frame), .data(last)], before: portDeadline(30))
        #expect(arrived.wait(timeout: .now() + 60) == .success)
        let expected = [3, WireFormat.maxFrameBytes, WireFormat.maxFrameBytes, WireFormat.maxFrameBytes, last.count]
        #expect(sizes.value == [[1], expected])
        #expect(port.droppedMessageCount == 0)
    }

    // MARK: - S-PORT-3

    @Test("S-PORT-3: a port sent as a component or as the reply port arrives as the very same object, and what is sent to it reaches the original")
    func portsTravelAsSendRights() throws {
        let (serverThread, serverLoop) = try makePortLoopThread("p3-server")
        defer { serverThread.stop() }
        let (clientThread, clientLoop) = try makePortLoopThread("p3-client")
        defer { clientThread.stop() }
        let server = try Port(transport: .inproc)
        let replies = try Port(transport: .inproc)
        let extra = try Port(transport: .inproc)
        defer { for each in [server, replies, extra] { each.invalidate() } }
        let seen = Locked<[String]>([])
        server.setMessageHandler { message in
            guard case let .port(component)? = message.components.first, let reply = message.replyPort else {
                seen.withLock { $0.append("no port arrived") }
                return
            }
            seen.withLock { $0.append(reply === replies && component === extra ? "same objects" : "other objects") }
            do {
                try reply.send(msgid: message.msgid + 100, components: [.data(Data("reply".utf8))], before: portDeadline())
                try component.send(msgid: message.msgid + 200, before: portDeadline())
            } catch {
                seen.withLock { $0.append("send failed: \(error)") }
            }
        }
        let replyInbox = PortInbox()
        let extraInbox = PortInbox()
        replies.setMessageHandler(replyInbox.handler)
        extra.setMessageHandler(extraInbox.handler)
        try server.schedule(in: serverLoop, forMode: .default)
        try replies.schedule(in: clientLoop, forMode: .default)
        try extra.schedule(in: clientLoop, forMode: .default)

        try server.send(msgid: 1, components: [.port(extra)], replyPort: replies, before: portDeadline())
        #expect(replyInbox.waitForCount(1))
        #expect(extraInbox.waitForCount(1))
        #expect(seen.value == ["same objects"])
        #expect(replyInbox.msgids == [101])
        #expect(replyInbox.messages.first?.dataComponents == [Data("reply".utf8)])
        #expect(replyInbox.messages.first?.receivePort === replies)
        #expect(extraInbox.msgids == [201])
        let clientThreadID = try #require(clientThread.threadID)
        #expect((replyInbox.all + extraInbox.all).allSatisfy { $0.threadID == clientThreadID })
    }

    @Test("S-PORT-3, S-PORT-5: a well-formed descriptor of a port that no longer exists arrives as an invalid port; sending to it fails with .invalidPort")
    func descriptorOfGonePort() throws {
        let fixture = try InboxPort("p3-gone")
        defer { fixture.close() }
        let (port, inbox) = (fixture.port, fixture.inbox)
        var gone: Port? = try Port(transport: .inproc)
        let descriptor = RawWire.descriptor(of: try #require(gone))
        gone = nil

        let peer = try RawPortPeer(endpoint: port.address.inprocEndpoint)
        try peer.send([RawWire.header(flags: 1, msgid: 5, kinds: [1]), descriptor, descriptor])
        #expect(inbox.waitForCount(1))
        let message = try #require(inbox.messages.first)
        guard case let .port(component)? = message.components.first, let reply = message.replyPort else {
            Issue.record("the ports did not arrive: \(message)")
            return
        }
        #expect(!component.isValid)
        #expect(!reply.isValid)
        #expect(portErrorThrown { try component.send(msgid: 1, before: portDeadline()) }?.caseName == "invalidPort")
        #expect(portErrorThrown { try port.send(msgid: 1, replyPort: reply, before: portDeadline()) }?.caseName == "componentNotTransferable")
        #expect(port.droppedMessageCount == 0)
    }
}
