import Dispatch
import Glibc
import Logging
import RunLoopKit
@testable import RunLoopKitPorts
import RunLoopKitLifecycle
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import ServiceLifecycle
import Synchronization
import Testing

/// RunLoopKitLifecycle in a swift-service-lifecycle `ServiceGroup`. Each
/// test runs in a child process (an exit test): it signals itself, and its
/// ports' flush is the process's.
@Suite("Lifecycle", .blocksThreads)
struct LifecycleTests {
    @Test("Lifecycle: SIGTERM to a ServiceGroup stops its LoopThread after what was queued for it, then the ports flush within the bound: nothing is lost, the tcp peer gets every message, the report is empty")
    func sigtermStopsLoopsThenFlushes() async {
        await #expect(processExitsWith: .success) {
            _ = NetworkKeysFixture.shared
            let peer = try NetworkPeerProcess.start(["serve", "127.0.0.1", "0"], child: 0)
            defer { peer.stop() }
            let right = try Port.fromDescriptor(NetworkPeerProcess.bytes(fromHex: #require(peer.waitForLine(starting: "PORT "))))
            let worker = LoopThread(name: "lifecycle-worker")
            let reports = Mutex<[PortFlushReport]>([])
            let group = ServiceGroup(
                services: [PortFlushService(bound: .seconds(30)) { report in reports.withLock { $0.append(report) } },
                           LoopThreadService(worker)],
                gracefulShutdownSignals: [.sigterm], logger: Logger(label: "lifecycle-test"))
            let running = Task { try await group.run() }
            // The service started the thread: the group traps SIGTERM from before it starts services.
            #expect(waitUntil(timeout: 60) { worker.isRunning })
            let sent = Mutex(0)
            // Queued before the signal, run before the thread stops.
            for index in 0..<200 {
                try worker.perform {
                    do {
                        // msgid 3: the peer prints "GOT <text>".
                        try right.send(msgid: 3, components: [.data(Data("m\(index)".utf8))], before: Date() + 30)
                        sent.withLock { $0 += 1 }
                    } catch {
                        print("send \(index) failed: \(error)")
                    }
                }
            }
            kill(getpid(), SIGTERM)
            try await running.value
            #expect(sent.withLock { $0 } == 200)
            #expect(!worker.isRunning)
            let flushed = reports.withLock { $0 }
            #expect(flushed.count == 1 && flushed.allSatisfy(\.isEmpty), "\(flushed)")
            #expect(waitUntil(timeout: 60) { peer.lines(starting: "GOT ").count == 200 }, "\(peer.lines(starting: "GOT ").count) of 200 arrived")
        }
    }

    @Test("Lifecycle: what cannot be written within the flush's bound (a peer that stopped reading) is reported as lost, by the peer's address, and the flush returns at its bound")
    func flushReportsWhatIsLeft() async {
        await #expect(processExitsWith: .success) {
            // Heartbeats must not find the stopped peer dead while the flood
            // fills what lies between (read at the process's first tcp use).
            setenv("RUNLOOPKIT_TCP_HEARTBEAT_TIMEOUT", "300", 1)
            _ = NetworkKeysFixture.shared
            let peer = try NetworkPeerProcess.start(["serve", "127.0.0.1", "0"], child: 0)
            defer {
                kill(peer.program.pid, SIGCONT)
                peer.stop()
            }
            let right = try Port.fromDescriptor(NetworkPeerProcess.bytes(fromHex: #require(peer.waitForLine(starting: "PORT "))))
            let address = try #require(right.address.tcpEndpoint?.listener)
            _ = try right.sendRequest(msgid: 1, components: [.data(Data("hello".utf8))], sendTimeout: 30, receiveTimeout: 60)
            // The peer stops reading: sends fill the kernel's buffers and
            // libzmq's queue until one waits past its deadline.
            kill(peer.program.pid, SIGSTOP)
            // Small enough for the send path's frame pool, whose frames the flush counts.
            let payload = Data(repeating: 0x2A, count: 120)
            let bound = Duration.milliseconds(300)
            // A send that timed out says only that libzmq's queue was full
            // for its 0.2 s: an I/O thread kept waiting that long on a loaded
            // machine leaves room in the kernel, and writes the queue out
            // once it runs (the flush then rightly finds nothing left). So
            // the flood goes on until what is queued cannot be written.
            let started = ContinuousClock.now
            var report: PortFlushReport?
            while report == nil && ContinuousClock.now - started < .seconds(60) {
                var stop: PortError?
                while stop == nil {
                    do throws(PortError) {
                        // msgid 4: the peer takes it and does nothing.
                        try right.send(msgid: 4, components: [.data(payload)], before: Date() + 0.2)
                    } catch {
                        stop = error
                    }
                }
                guard case .timedOut? = stop else {
                    Issue.record("the flood ended with \(String(describing: stop)), not a send that waited past its deadline")
                    return
                }
                let flushed = Port.flushOutbound(within: bound)
                if !flushed.isEmpty { report = flushed }
            }
            let left = try #require(report, "every flush found everything written, with the peer stopped for 60 s")
            #expect(left.elapsed >= bound)
            #expect((left.unwrittenMessages[address] ?? 0) > 0, "\(left)")
        }
    }

    @Test("Lifecycle: the example, stopped by a SIGTERM from outside as a service manager stops it, handles every job sent before the signal and reports a clean flush")
    func exampleStopsOnSIGTERM() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let example = try SpawnedProgram(
            "graceful-shutdown", ["--wait"], environment: ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"], in: directory)
        #expect(waitUntil(timeout: 60) { example.output.contains("READY") || kill(example.pid, 0) != 0 }, "\(example.errorOutput)")
        kill(example.pid, SIGTERM)
        #expect(example.waitForExit(timeout: 60) == 0, "\(example.output) \(example.errorOutput)")
        #expect(example.output.contains("jobs sent: 1000, handled: 1000"), "\(example.output)")
        #expect(example.output.contains("flush: everything accepted was written"), "\(example.output)")
    }
}
