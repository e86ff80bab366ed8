// Ports over tcp between processes on loopback (S-NET-1, S-NET-2,
// S-NET-3): the other processes are `rlk-net-peer` children, each with its
// own key (NetworkKeysFixture). The same behaviour between hosts made of
// network namespaces is TCPHostsTests'.
import Dispatch
import Glibc
import RunLoopKit
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Ports over tcp between processes (S-NET-1, S-NET-2, S-NET-3)", .serialized, .blocksThreads)
struct TCPPortTests {
    init() { _ = NetworkKeysFixture.shared }

    static let loopback = Port.Transport.tcp(.listening(on: "127.0.0.1"))

    @Test("S-NET-1: data, a port component and a reply port go both ways over tcp: the reply brings this process's own port back as itself, and the peer's send to the component reaches it")
    func roundTripWithPortsBothWays() async throws {
        let peer = try NetworkPeerProcess.serve(child: 0)
        defer { peer.stop() }
        let inbox = try IPCInbox("tcp-inbox", transport: Self.loopback)
        defer { inbox.close() }
        let remote = try peer.sendRight()
        #expect(remote.transport == .tcp(.listening(on: "127.0.0.1", port: TCPTransport.hostAndPort(remote.address.tcpEndpoint!.listener!)!.port, advertising: "127.0.0.1")))

        // Both requests on a LoopThread: awaited on the cooperative pool,
        // the second came after the peer's own 120 s limit in a sanitizer
        // run whose exit tests held the pool for minutes ("connection broke").
        let (reply, arrived) = try await onLoopThread("tcp-rt-driver") { _ -> (PortMessage, Bool) in
            let reply: PortMessage
            do {
                reply = try await remote.request(msgid: 1, components: [.data(Data("hello".utf8)), .port(inbox.port)], timeout: .seconds(20))
                // The peer sends to the component it was given: over the same connection.
                _ = try await remote.request(msgid: 2, components: [.port(inbox.port)], timeout: .seconds(20))
            } catch {
                throw TestFailure("\(error); the peer said: \(peer.program.output) \(peer.program.errorOutput)")
            }
            return (reply, await inbox.arrival(ofCount: 1))
        }
        #expect(reply.msgid == 1)
        #expect(reply.dataComponents.first == Data("hello".utf8))
        guard case let .port(back)? = reply.components.last else { throw TestFailure("no port component in \(reply)") }
        #expect(back === inbox.port, "S-PORT-3: this process's own port comes back as the same object")
        #expect(arrived)
        #expect(inbox.messages.first.map { String(decoding: $0.dataComponents.first ?? Data(), as: UTF8.self) } == "via \(peer.program.pid)")
    }

    @Test("S-NET-1, S-PORT-4: 4 threads × 5,000 messages to one port of another process over tcp, all at once: the peer answers each exactly once, and each thread's messages reach it in the order that thread sent them")
    func concurrentSendersKeepTheirOrder() throws {
        let (senders, perSender) = (4, 5_000)
        let peer = try NetworkPeerProcess.serve(child: 0)
        defer { peer.stop() }
        let remote = try peer.sendRight()
        let thread = LoopThread(name: "tcp-answers")
        try thread.start()
        defer { thread.stop() }
        let answers = try Port(transport: Self.loopback)
        defer { answers.invalidate() }
        // The peer answers in the order it received, on one connection:
        // each sender's answers come back in its sending order if it sent in order.
        let tally = Locked((next: [Int](repeating: 0, count: senders), total: 0, outOfOrder: 0))
        let allAnswered = DispatchSemaphore(value: 0)
        answers.setMessageHandler { message in
            let (sender, index) = message.dataComponents.first.map { data in
                data.withUnsafeBytes { (Int($0.load(fromByteOffset: 0, as: UInt32.self)), Int($0.load(fromByteOffset: 4, as: UInt32.self))) }
            } ?? (0, -1)
            let done: Bool = tally.withLock { tally in
                if tally.next[sender] != index { tally.outOfOrder += 1 }
                tally.next[sender] = index + 1
                tally.total += 1
                return tally.total == senders * perSender
            }
            if done { allAnswered.signal() }
        }
        try answers.schedule(on: thread)
        let failures = Locked<[String]>([])
        let sent = DispatchGroup()
        for sender in 0..<senders {
            DispatchQueue.global().async(group: sent) {
                for index in 0..<perSender {
                    var record = (UInt32(sender), UInt32(index))
                    let data = withUnsafeBytes(of: &record) { Data($0) }
                    do {
                        // msgid 5: the peer answers with the same components.
                        try remote.send(msgid: 5, components: [.data(data)], replyPort: answers, before: Date() + 30)
                    } catch {
                        failures.withLock { $0.append("sender \(sender), message \(index): \(error)") }
                        return
                    }
                }
            }
        }
        #expect(sent.wait(timeout: .now() + 60) == .success)
        #expect(failures.value.isEmpty, "\(failures.value)")
        #expect(allAnswered.wait(timeout: .now() + 60) == .success, "\(tally.value.total) answers; the peer said: \(peer.program.errorOutput)")
        #expect(tally.value.total == senders * perSender)
        #expect(tally.value.outOfOrder == 0)
        #expect(tally.value.next == [Int](repeating: perSender, count: senders))
    }

    @Test("S-NET-1: over IPv6 as over IPv4: a peer listening on ::1 answers, and this process's port on ::1 gets the peer's send")
    func ipv6() async throws {
        let peer = try NetworkPeerProcess.serve(child: 1, bind: "::1")
        defer { peer.stop() }
        let remote = try peer.sendRight()
        #expect(remote.address.tcpEndpoint?.listener?.hasPrefix("tcp://[::1]:") == true)
        let inbox = try IPCInbox("tcp-v6", transport: .tcp(.listening(on: "::1")))
        defer { inbox.close() }
        _ = try await remote.request(msgid: 2, components: [.port(inbox.port)], timeout: .seconds(20))
        #expect(await inbox.arrival(ofCount: 1))
    }

    @Test("S-NET-1: between two RunLoopKit processes each one's own tcp ports travel as 16-byte version-4 descriptors once their home frames are exchanged (and, their reads frames exchanged too, in version-5 messages, short), and name exactly the ports their full descriptors name: this process's port comes back as itself, and the peer's port found by a lookup over tcp is the send right its full descriptor gives")
    func relativeDescriptorsNameTheSamePorts() async throws {
        let peer = try NetworkPeerProcess.serve(child: 0, name: "relative-peer")
        defer { peer.stop() }
        let inbox = try IPCInbox("tcp-relative", transport: Self.loopback)
        defer { inbox.close() }
        let remote = try peer.sendRight()
        let replies = try await onLoopThread("tcp-relative-driver") { _ -> [PortMessage] in
            // The first request waits for the connection (its welcome and
            // the peer's home); the second goes once both are known.
            var replies: [PortMessage] = []
            for _ in 0..<2 {
                replies.append(try await remote.request(msgid: 1, components: [.port(inbox.port)], timeout: .seconds(20)))
            }
            return replies
        }
        let instance = try #require(remote.address.tcpEndpoint?.instance)
        let limit = NetworkHub.shared.state.withLock { $0.connections[instance] }?.relativeLimit.load(ordering: .acquiring) ?? 0
        #expect(limit > 0, "the peer sent its home frame: it reads version 4")
        let connection = NetworkHub.shared.state.withLock { $0.connections[instance] }
        #expect(connection?.readsCompactMessages == true, "the peer's welcome had a reads frame: this process writes version 5 to it")
        #expect(inbox.port.descriptorBytes(relativeLimit: limit).count == WireFormat.relativeDescriptorSize,
                "this process's port goes in 16 bytes, not \(inbox.port.descriptorBytes.count)")
        for reply in replies {
            guard case let .port(back)? = reply.components.first else { throw TestFailure("no port component in \(reply)") }
            #expect(back === inbox.port, "the peer read the port's version-4 descriptor as the port it is")
        }
        // The other way: the peer's answer names its port in version 4, read against its home.
        let resolvedBefore = DescriptorCache.relativeDescriptorsResolved.load(ordering: .relaxed)
        let looked = try PortNameServer.lookup("relative-peer", at: peer.endpoint, server: TCPNameLookupTests.serverKey(0))
        #expect(DescriptorCache.relativeDescriptorsResolved.load(ordering: .relaxed) > resolvedBefore)
        #expect(looked === remote, "the looked-up port is the one the full descriptor named")
    }

    @Test("S-NET-1: a send right passed from this process to one peer reaches another peer's port: a right travels on to a third process and sends to the original")
    func rightPassedOnToAThirdProcess() async throws {
        let relay = try NetworkPeerProcess.serve(child: 1)
        defer { relay.stop() }
        let target = try NetworkPeerProcess.serve(child: 2)
        defer { target.stop() }
        let targetRight = try target.sendRight()
        _ = try await relay.sendRight().request(msgid: 2, components: [.port(targetRight)], timeout: .seconds(20))
        #expect(waitUntil(timeout: 20) { target.line(starting: "GOT ") != nil })
        #expect(target.line(starting: "GOT ") == "via \(relay.program.pid)")
    }

    @Test("S-NET-1, S-PORT-2: an inproc or ipc port cannot travel to a tcp port of another process: the send fails at once with componentNotTransferable and sends nothing; a tcp port can")
    func onlyTCPPortsTravelOverTCP() async throws {
        let peer = try NetworkPeerProcess.serve(child: 0)
        defer { peer.stop() }
        let remote = try peer.sendRight()
        for transport in [Port.Transport.inproc, .ipc] {
            let local = try Port(transport: transport)
            defer { local.invalidate() }
            do {
                try remote.send(msgid: 3, components: [.port(local)], before: Date() + 10)
                Issue.record("a \(transport) port was sent over tcp")
            } catch {
                #expect(error.caseName == "componentNotTransferable", "\(error)")
                #expect(error.description.contains("another host"), "\(error)")
            }
        }
        #expect(remote.isValid)
        let inbox = try IPCInbox("tcp-carried", transport: .tcp(.connectingOnly))
        defer { inbox.close() }
        _ = try await remote.request(msgid: 2, components: [.port(inbox.port)], timeout: .seconds(20))
        #expect(await inbox.arrival(ofCount: 1))
        #expect(peer.line(starting: "GOT ") == nil, "nothing of the refused sends arrived")
    }

    @Test("S-NET-1, S-PORT-8: a port of a process that only connects, with no connection to this one, fails at its first send, at once")
    func connectingOnlyPortWithoutConnectionIsUnreachable() throws {
        let stranger = ProcessInstance(high: 0x1234, low: 0x5678)
        let address = PortAddress(pid: 77, startTime: 1, portID: 9,
                                  route: .tcp(TCPTransport.Endpoint(instance: stranger, listener: nil, serverKey: nil)))
        let right = try Port.fromDescriptor(WireFormat.encodeDescriptor(address))
        let started = MonotonicClock.now()
        #expect(throws: PortError.self) { try right.send(msgid: 1, before: Date() + 30) }
        #expect(MonotonicClock.now() - started < 1_000_000_000)
        #expect(!right.isValid)
        guard case let .invalidated(reason) = right.state.withLock({ $0.lifecycle }) else { throw TestFailure("still open") }
        #expect(reason.caseName == "unreachable")
        #expect(reason.description.contains("only connects"))
    }

    @Test("S-NET-2: a descriptor whose server key was changed names a server that cannot prove it: the send fails as unreachable within the tcp connection bound, whatever its deadline")
    func wrongServerKeyIsRefused() throws {
        let peer = try NetworkPeerProcess.serve(child: 0)
        defer { peer.stop() }
        var forged = peer.descriptor
        let other = try CurveKeyPair.generate().publicKey.bytes
        forged.replaceSubrange(45..<77, with: other)
        let right = try Port.fromDescriptor(forged)
        let started = MonotonicClock.now()
        do {
            try right.send(msgid: 1, components: [.data(Data("x".utf8))], before: Date() + 60)
            Issue.record("a send to a server with the wrong key went through")
        } catch {
            #expect(error.caseName == "unreachable" || error.caseName == "connectionLost", "\(error)")
        }
        let elapsed = MonotonicClock.now() - started
        #expect(elapsed < NetworkHub.connectionBoundNanoseconds + 2_000_000_000, "\(elapsed / 1_000_000) ms")
    }

    @Test("S-NET-2: a client whose key the authorized-keys file does not list is refused: its request fails, and nothing reaches the port")
    func unknownClientIsRefused() throws {
        let inbox = try IPCInbox("tcp-refuse", transport: Self.loopback) { message in
            try? message.replyPort?.send(msgid: message.msgid, before: Date() + 5)
        }
        defer { inbox.close() }
        let stranger = try NetworkPeerProcess.call(child: NetworkKeysFixture.unlistedChild, inbox.port.descriptor, count: 1)
        #expect(stranger.program.waitForExit(timeout: 60) == 1)
        #expect(stranger.line(starting: "ERROR ")?.hasPrefix("unreachable") == true, "\(stranger.program.output)")
        #expect(inbox.count == 0)
        // A listed client gets through the same endpoint.
        let friend = try NetworkPeerProcess.call(child: 3, inbox.port.descriptor, count: 1)
        #expect(friend.program.waitForExit(timeout: 60) == 0, "\(friend.program.output)")
    }

    @Test("S-NET-2: a key removed from the authorized-keys file while its client is connected is revoked without a restart: its connection is closed, its next request fails, and it cannot connect again")
    func revokedKeyIsClosed() throws {
        let fixture = NetworkKeysFixture.shared
        defer { fixture.writeAuthorizedKeys(except: [NetworkKeysFixture.unlistedChild]) }
        let echo = try IPCInbox("tcp-revoke", transport: Self.loopback) { message in
            try? message.replyPort?.send(msgid: 1, components: message.components, before: Date() + 5)
        }
        defer { echo.close() }
        let client = try NetworkPeerProcess.call(child: 2, echo.port.descriptor, count: 10_000, pauseMilliseconds: 20)
        #expect(waitUntil(timeout: 60) { client.lines(starting: "REPLY ").count >= 3 })
        fixture.writeAuthorizedKeys(except: [NetworkKeysFixture.unlistedChild, 2])
        #expect(client.program.waitForExit(timeout: 30) == 1, "the revoked client went on: \(client.program.output.suffix(200))")
        #expect(client.line(starting: "ERROR ")?.hasPrefix("connectionLost") == true, "\(client.program.output.suffix(300))")
        let again = try NetworkPeerProcess.call(child: 2, echo.port.descriptor, count: 1)
        #expect(again.program.waitForExit(timeout: 60) == 1)
        #expect(again.line(starting: "ERROR ")?.hasPrefix("unreachable") == true, "\(again.program.output)")
    }

    @Test("S-NET-2: a plain-text peer cannot talk to a CURVE endpoint: what it sends never reaches the port")
    func plainTextPeerIsRefused() throws {
        let inbox = try IPCInbox("tcp-plain", transport: Self.loopback) { message in
            try? message.replyPort?.send(msgid: message.msgid, before: Date() + 5)
        }
        defer { inbox.close() }
        let endpoint = try #require(inbox.port.address.tcpEndpoint?.listener)
        let context = try ZMQContext()
        defer { context.terminate() }
        let dealer = try context.makeSocket(.dealer)
        defer { dealer.close() }
        try dealer.setRoutingID(Data(WireFormat.instanceBytes(ProcessInstance(high: 1, low: 2))))
        try dealer.connect(endpoint)
        let destination = WireFormat.Destination(instance: .current, portID: inbox.port.address.portID)
        let frame = RawWire.tcpMessage(to: destination, msgid: 5)
        let hello = WireFormat.encodeControl(.hello(from: ProcessInstance(high: 1, low: 2), expecting: .current))
        _ = try hello.withUnsafeBytes { try dealer.send($0, dontWait: true) }
        _ = try frame.withUnsafeBytes { try dealer.send($0, dontWait: true) }
        // A listed peer's message through the same endpoint arrives; the plain one never does.
        let friend = try NetworkPeerProcess.call(child: 3, inbox.port.descriptor, count: 1)
        #expect(friend.program.waitForExit(timeout: 60) == 0, "\(friend.program.output)")
        #expect(inbox.wait(forCount: 1, timeout: 30))
        // The plain peer's handshake fails at once (its mechanism is not the
        // endpoint's); its message, sent before the friend's request, had it
        // got in, would have had the friend's whole round trip to arrive.
        #expect(inbox.messages.allSatisfy { $0.msgid == 1 }, "\(inbox.messages.map(\.msgid))")
    }

    @Test("S-NET-1, S-PORT-7: an authorized peer's messages for another instance, for no such port, and malformed ones are dropped and counted by the endpoint, and its good message after them arrives")
    func endpointDropsWhatItCannotRoute() throws {
        let inbox = try IPCInbox("tcp-drops", transport: Self.loopback)
        defer { inbox.close() }
        let endpoint = try #require(inbox.port.address.tcpEndpoint)
        let context = try ZMQContext()
        defer { context.terminate() }
        let dealer = try context.makeSocket(.dealer)
        defer { dealer.close() }
        let me = ProcessInstance(high: 7, low: 8)
        try dealer.setRoutingID(Data(WireFormat.instanceBytes(me)))
        // This process's own key: always authorized.
        try dealer.setCurveClient(try NetworkKeys.keyPair(), serverKey: try #require(endpoint.serverKey))
        try dealer.connect(try #require(endpoint.listener))
        func message(to destination: WireFormat.Destination, msgid: UInt32) -> [UInt8] {
            RawWire.tcpMessage(to: destination, msgid: msgid)
        }
        let before = Port.tcpEndpointDropCounts
        let frames: [[UInt8]] = [
            WireFormat.encodeControl(.hello(from: me, expecting: .current)),
            message(to: .init(instance: ProcessInstance(high: 1, low: 1), portID: inbox.port.address.portID), msgid: 1),
            message(to: .init(instance: .current, portID: 999_999), msgid: 2),
            Array("not a message at all".utf8),
            message(to: .init(instance: .current, portID: inbox.port.address.portID), msgid: 3),
        ]
        for frame in frames { _ = try frame.withUnsafeBytes { try dealer.send($0) } }
        #expect(inbox.wait(forCount: 1, timeout: 30))
        #expect(inbox.messages.map(\.msgid) == [3])
        let after = Port.tcpEndpointDropCounts
        #expect(after[.wrongInstance] == before[.wrongInstance] + 1)
        #expect(after[.noSuchPort] == before[.noSuchPort] + 1)
        #expect(after[.badMagic] == before[.badMagic] + 1)
    }

    @Test("S-NET-2: a capture of the traffic between two processes shows no plaintext payload with CURVE, and shows it with plain text (the capture's control)", arguments: [false, true])
    func trafficIsEncrypted(plain: Bool) throws {
        let peer = try NetworkPeerProcess.serve(child: 1, plain: plain)
        defer { peer.stop() }
        let address = try peer.descriptor.withUnsafeBytes { try WireFormat.decodeDescriptor($0) }
        let endpoint = try #require(address.tcpEndpoint)
        let listener = try #require(endpoint.listener)
        let (_, target) = try #require(TCPTransport.hostAndPort(listener))
        let relay = try TCPRelay(to: target)
        defer { relay.close() }
        // The peer's port, as reached through the relay that records the bytes.
        let throughRelay = WireFormat.encodeDescriptor(PortAddress(
            pid: address.pid, startTime: address.startTime, portID: address.portID,
            route: .tcp(TCPTransport.Endpoint(instance: endpoint.instance, listener: "tcp://127.0.0.1:\(relay.port)", serverKey: endpoint.serverKey))))
        let marker = "PLAINTEXT-MARKER-7f3a"
        let client = try NetworkPeerProcess.call(child: 2, throughRelay, count: 3, payload: marker)
        #expect(client.program.waitForExit(timeout: 60) == 0, "\(client.program.output) \(client.program.errorOutput)")
        #expect(client.lines(starting: "REPLY ").count == 3)
        let captured = relay.captured()
        #expect(captured.count > 300, "the relay saw \(captured.count) bytes")
        let needle = Array(marker.utf8)
        let seen = captured.count >= needle.count
            && (0...(captured.count - needle.count)).contains { captured[$0..<($0 + needle.count)].elementsEqual(needle) }
        #expect(seen == plain, plain ? "plain text: the payload must show (the capture works)" : "CURVE: the payload showed in the capture")
    }

    @Test("S-NET-3: a peer killed while a request waits on it: the request fails with connectionLost naming the peer's instance and address, within the heartbeat bound, and the send right is invalid")
    func killedPeerFailsWaitingRequests() async throws {
        let peer = try NetworkPeerProcess.serve(child: 1)
        defer { peer.stop() }
        let remote = try peer.sendRight()
        _ = try await remote.request(msgid: 1, timeout: .seconds(20))
        let instance = try #require(remote.address.tcpEndpoint?.instance)
        let waiting = Task { try await remote.request(msgid: 4, timeout: .seconds(60)) }
        usleep(200_000)
        let killed = MonotonicClock.now()
        kill(peer.program.pid, SIGKILL)
        do {
            _ = try await waiting.value
            Issue.record("a request to a killed peer was answered")
        } catch let error as PortError {
            #expect(error.caseName == "connectionLost", "\(error)")
            #expect(error.description.contains(instance.description), "\(error)")
            #expect(error.description.contains("127.0.0.1"), "\(error)")
        }
        let elapsed = MonotonicClock.now() - killed
        // At once (the peer's kernel closed the connection), well within
        // the heartbeat bound, with slack for a loaded machine.
        #expect(NetworkHub.heartbeatTimeoutNanoseconds >= 10_000_000_000)
        #expect(elapsed < 5_000_000_000, "\(elapsed / 1_000_000) ms")
        #expect(!remote.isValid)
    }

    @Test("S-NET-3: a peer that stops answering (SIGSTOP: its connection stays open, its heartbeats stop) is taken for dead within the heartbeat bound its caller was given (RUNLOOPKIT_TCP_HEARTBEAT_TIMEOUT), learned from the connection: a waiting request fails with connectionLost")
    func silentPeerIsFoundDeadByHeartbeats() throws {
        let peer = try NetworkPeerProcess.serve(child: 3)
        defer {
            kill(peer.program.pid, SIGCONT)
            peer.stop()
        }
        // The caller is a child of its own: the heartbeat timeout is a
        // process's, and this process keeps the default for its other tests.
        let hold = try NetworkPeerProcess.start(["hold", NetworkPeerProcess.hex(peer.descriptor)], child: 2,
                                                environment: NetworkPeerProcess.shortHeartbeats)
        defer { hold.stop() }
        #expect(waitUntil(timeout: 60) { hold.line(starting: "WAITING") != nil }, "\(hold.program.output) \(hold.program.errorOutput)")
        usleep(200_000)
        let stopped = MonotonicClock.now()
        kill(peer.program.pid, SIGSTOP)
        #expect(hold.program.waitForExit(timeout: 60) == 1, "\(hold.program.output)")
        let elapsed = MonotonicClock.now() - stopped
        let error = hold.line(starting: "ERROR ") ?? ""
        #expect(error.hasPrefix("connectionLost") && error.contains("heartbeats"), "\(hold.program.output)")
        let timeout = NetworkPeerProcess.shortHeartbeatTimeoutNanoseconds
        // The bound is the heartbeat's (1.25 × the timeout); the slack is
        // scheduling on a loaded machine under ThreadSanitizer.
        #expect(elapsed >= timeout / 2, "found dead too soon: \(elapsed / 1_000_000) ms")
        #expect(elapsed < timeout * 5 / 4 + 2_000_000_000, "\(elapsed / 1_000_000) ms")
    }

    @Test("S-NET-3, S-PORT-4: a process whose tcp peer stopped reading (SIGSTOP, its queue full) exits within the exit bound, and logs what it could not write")
    func exitIsBoundedWhateverThePeerDoes() throws {
        let peer = try NetworkPeerProcess.serve(child: 2)
        defer {
            kill(peer.program.pid, SIGCONT)
            peer.stop()
        }
        let flooder = try NetworkPeerProcess.start(["flood", NetworkPeerProcess.hex(peer.descriptor)], child: 3)
        #expect(waitUntil(timeout: 60) { flooder.line(starting: "CONNECTED") != nil }, "\(flooder.program.errorOutput)")
        // The peer stops reading; the flood fills its queues and the kernel's.
        kill(peer.program.pid, SIGSTOP)
        #expect(waitUntil(timeout: 120) { flooder.line(starting: "FULL ") != nil }, "\(flooder.program.errorOutput)")
        let full = MonotonicClock.now()
        #expect(flooder.program.waitForExit(timeout: 60) == 0)
        let elapsed = MonotonicClock.now() - full
        // The exit bound (2 s) and slack for a loaded machine under ThreadSanitizer.
        #expect(elapsed < ExitBound.defaultNanoseconds + 3_000_000_000, "\(elapsed / 1_000_000) ms")
        #expect(flooder.program.errorOutput.contains("exit: tcp connections still held unwritten messages"), "\(flooder.program.errorOutput.suffix(400))")
    }

    @Test("S-NET-1, S-NET-3: a process restarted at the same address never gets what is sent to the old one's send rights: they fail, and a new right from the new process works")
    func restartedProcessGetsNothingMeantForTheOldOne() async throws {
        let first = try NetworkPeerProcess.serve(child: 0)
        let oldRight = try first.sendRight()
        let listener = try #require(oldRight.address.tcpEndpoint?.listener)
        let port = try #require(TCPTransport.hostAndPort(listener)?.port)
        _ = try await oldRight.request(msgid: 1, timeout: .seconds(20))
        kill(first.program.pid, SIGKILL)
        _ = first.program.waitForExit(timeout: 30)
        let second = try NetworkPeerProcess.serve(child: 0, port: port)
        defer { second.stop() }
        #expect(await PortProcess.waitUntil(timeout: 30) { !oldRight.isValid })
        #expect(throws: PortError.self) {
            try oldRight.send(msgid: 3, components: [.data(Data("for the old one".utf8))], before: Date() + 10)
        }
        let newRight = try second.sendRight()
        #expect(newRight != oldRight)
        let reply = try await newRight.request(msgid: 1, components: [.data(Data("new".utf8))], timeout: .seconds(20))
        #expect(reply.dataComponents.first == Data("new".utf8))
        usleep(200_000)
        #expect(second.line(starting: "GOT ") == nil, "the new process got a message meant for the old one")
    }
}
