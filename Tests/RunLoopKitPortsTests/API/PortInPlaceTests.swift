// Reading messages in place (Port.setInPlaceMessageHandler, PortMessageView)
// and sending from bytes (Port.send(msgid:bytes:…)): the same messages as
// PortMessage and Data carry, without a Data on either side.
import Dispatch
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing
import ZeroMQ

@Suite("Ports read in place and sent from bytes (S-PORT-2, S-SRC1-1)", .blocksThreads)
struct PortInPlaceTests {
    /// What an in-place handler saw of one message, copied out while it ran.
    struct Seen: Sendable, Equatable {
        var msgid: UInt32
        var isPort: [Bool]
        var data: [[UInt8]?]
        var ports: [Port?]
        var replyPort: Port?
        var receivePort: Port
        var made: [PortMessage.Component]
    }

    static let largeCount = WireFormat.packLimit + 100

    static func seen(_ message: borrowing PortMessageView) -> Seen {
        let indices = 0..<message.componentCount
        return Seen(
            msgid: message.msgid,
            isPort: indices.map { message.isPort(at: $0) },
            data: indices.map { message.isPort(at: $0) ? nil : Array(message.unsafeBytes(ofComponent: $0)) },
            ports: indices.map { message.isPort(at: $0) ? message.port(at: $0) : nil },
            replyPort: message.replyPort, receivePort: message.receivePort,
            made: message.makeMessage().components)
    }

    @Test("S-PORT-2, S-PORT-3: an in-place handler reads the msgid, data, ports and reply port that a PortMessage handler gets, packed and over 64 KiB")
    func viewMatchesMessage() throws {
        let (thread, loop) = try makePortLoopThread("in-place-view")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let seen = CondLocked<[Seen]>([])
        port.setInPlaceMessageHandler { message in
            let copy = Self.seen(message)
            seen.update { $0.append(copy) }
        }
        try port.schedule(in: loop, forMode: .default)
        let carried = try Port(transport: .inproc), reply = try Port(transport: .inproc)
        defer { carried.invalidate(); reply.invalidate() }
        let large = Data((0..<(WireFormat.packLimit + 10)).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let shapes: [[PortMessage.Component]] = [
            [.data(Data("one".utf8)), .port(carried), .data(Data()), .data(Data([0, 1, 2, 255]))],
            [],
            [.data(large), .port(carried)],
        ]
        for (index, components) in shapes.enumerated() {
            try port.send(msgid: UInt32(index + 1), components: components, replyPort: index == 1 ? nil : reply, before: portDeadline())
        }
        #expect(seen.wait { $0.count == shapes.count })
        let all = seen.value
        for (index, components) in shapes.enumerated() {
            let message = all[index]
            #expect(message.msgid == UInt32(index + 1))
            #expect(message.isPort == components.map { if case .port = $0 { true } else { false } })
            #expect(message.data == components.map { if case let .data(data) = $0 { Array(data) } else { nil } })
            // A port component is the local port itself (S-PORT-3).
            #expect(message.ports.map { $0.map(ObjectIdentifier.init) } == components.map {
                if case let .port(port) = $0 { ObjectIdentifier(port) } else { nil }
            })
            #expect(message.replyPort === (index == 1 ? nil : reply))
            #expect(message.receivePort === port)
            #expect(message.made == components)
        }
        #expect(port.droppedMessageCount == 0)
    }

    @Test("S-PORT-2: send(msgid:bytes:) puts on the wire exactly what send(components: [.data]) does, packed and over 64 KiB")
    func bytesSendIsTheSameWire() throws {
        let (pull, destination) = try standInReceiver()
        defer { pull.close() }
        let reply = Port(sendRightTo: WireFormatTests.exampleReplyAddress)
        for payload in [Data("hi".utf8), Data(), Data(repeating: 0x5A, count: WireFormat.packLimit)] {
            for replyPort in [reply, nil] {
                try destination.send(msgid: 7, components: [.data(payload)], replyPort: replyPort, before: portDeadline())
                let fromData = try #require(try pull.receiveMultipart())
                try Array(payload).withUnsafeBytes { bytes in
                    try destination.send(msgid: 7, bytes: bytes, replyPort: replyPort, before: portDeadline())
                }
                let fromBytes = try #require(try pull.receiveMultipart())
                #expect(fromBytes == fromData, "\(payload.count) bytes, reply port: \(replyPort != nil)")
            }
        }
        // The documented example, byte for byte.
        try Array("hi".utf8).withUnsafeBytes { bytes in
            try destination.send(msgid: 7, bytes: bytes, replyPort: reply, before: portDeadline())
        }
        #expect(try pull.receiveMultipart()?.map { Array($0) } == [WireFormatTests.examplePacked])
    }

    @Test("S-PORT-7: with an in-place handler a malformed message is dropped and counted, and the next one is delivered")
    func malformedDropped() throws {
        let (thread, loop) = try makePortLoopThread("in-place-malformed")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let msgids = CondLocked<[UInt32]>([])
        port.setInPlaceMessageHandler { message in
            let msgid = message.msgid
            msgids.update { $0.append(msgid) }
        }
        try port.schedule(in: loop, forMode: .default)
        let peer = try RawPortPeer(endpoint: port.address.inprocEndpoint)
        // A record that announces more bytes than the frame holds; then a good one.
        var bad = RawWire.packed(msgid: 1, kinds: [0], records: [Data("abc".utf8)])
        bad.removeLast()
        try peer.send([bad])
        try peer.send([RawWire.packed(msgid: 2, kinds: [0], records: [Data("abc".utf8)])])
        #expect(msgids.wait { $0 == [2] })
        #expect(port.droppedMessageCount == 1)
    }

    @Test("S-PORT-5, S-SRC1-1: what an in-place handler reads stays intact while another thread invalidates the port, and after a nested run delivers more")
    func viewOutlivesCloseAndNestedRun() throws {
        let (thread, loop) = try makePortLoopThread("in-place-lifetime")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        port.maxMessagesPerCallout = 1
        let inHandler = DispatchSemaphore(value: 0), invalidated = DispatchSemaphore(value: 0)
        let checks = CondLocked<[String]>([])
        port.setInPlaceMessageHandler { message in
            let before = Array(message.unsafeBytes(ofComponent: 0))
            if message.msgid == 1 {
                // Another thread closes the port while this message is being read.
                inHandler.signal()
                _ = invalidated.wait(timeout: .now() + 30)
            }
            let after = Array(message.unsafeBytes(ofComponent: 0))
            let msgid = message.msgid
            checks.update { $0.append("m\(msgid) \(before == after && after == Array(repeating: UInt8(msgid), count: Self.largeCount))") }
        }
        try port.schedule(in: loop, forMode: .default)
        let other = try Port(transport: .inproc)
        defer { other.invalidate() }
        let seenOther = CondLocked<[String]>([])
        other.setInPlaceMessageHandler { message in
            let before = Array(message.unsafeBytes(ofComponent: 0))
            // A nested run delivers message 3 while message 2 is still being read.
            if message.msgid == 2 { _ = RunLoop.current.run(mode: .default, seconds: 30, returnAfterSourceHandled: true) }
            let same = before == Array(message.unsafeBytes(ofComponent: 0)) && before == Array(repeating: UInt8(message.msgid), count: 100)
            let msgid = message.msgid
            seenOther.update { $0.append("m\(msgid) \(same)") }
        }
        other.maxMessagesPerCallout = 1
        try other.schedule(in: loop, forMode: .default)

        // Over the pack limit: a frame of its own, which closing the port's
        // receiver would release if it still held it.
        try port.send(msgid: 1, components: [.data(Data(repeating: 1, count: Self.largeCount))], before: portDeadline())
        #expect(waitFor(inHandler))
        port.invalidate()
        invalidated.signal()
        #expect(checks.wait { $0 == ["m1 true"] })

        for msgid: UInt32 in 2...3 {
            try other.send(msgid: msgid, components: [.data(Data(repeating: UInt8(msgid), count: 100))], before: portDeadline())
        }
        #expect(seenOther.wait { $0.count == 2 })
        #expect(seenOther.value == ["m3 true", "m2 true"], "message 3 arrives in the nested run, inside message 2's handler")
    }

    @Test("S-SRC1-1: a handler that switches between PortMessage and in-place takes the very next message, in order")
    func switchingKinds() throws {
        let log = EventLog()
        try onNewThread {
            let port = try Port(transport: .inproc)
            @Sendable func inPlace(_ message: borrowing PortMessageView) {
                log.add("view\(message.msgid)")
                if message.msgid == 2 { port.setMessageHandler(whole) }
            }
            @Sendable func whole(_ message: PortMessage) {
                log.add("message\(message.msgid)")
                if message.msgid == 1 || message.msgid == 3 { port.setInPlaceMessageHandler(inPlace) }
            }
            port.setMessageHandler(whole)
            try port.schedule(in: RunLoop.current, forMode: .default)
            for msgid: UInt32 in 1...5 { try port.send(msgid: msgid, before: portDeadline()) }
            _ = RunLoop.current.run(mode: .default, seconds: 0)
            port.invalidate()
        }
        #expect(log.all == ["message1", "view2", "message3", "view4", "view5"])
    }
}
