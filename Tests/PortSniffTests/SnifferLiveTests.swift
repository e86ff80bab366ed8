// portsniff with the demos, live: pingpong and ipc-demo recorded exactly
// (both directions, trace ids paired, latencies), events in time order,
// a program run under it (-- COMMAND), the live view summarised above
// --max-rate, and a recording replayed through the filters and views.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("portsniff: live with the demos", .blocksThreads)
struct SnifferLiveTests {
    @Test("portsniff shows events in time order (a reorder window), so that a DELIVER comes after its SEND and carries the latency: live, pingpong's events in time order; replayed, a recording written out of order comes out sorted",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func eventsInTimeOrder() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        // Live, with a window of 2 s rather than the default 50 ms: how late
        // an event comes is the machine's (a tap thread held back on a
        // loaded machine under a sanitizer makes a whole batch late), and
        // what is checked here is the window's order.
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let roundTrips = 500
        let sniff = try SpawnedProgram("portsniff", ["--json", "--window", "2000", "--count", "\(4 * roundTrips)"], environment: runtime, in: directory)
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        let pingpong = try SpawnedProgram("pingpong", ["--count", "\(roundTrips)"], environment: runtime.merging(["RUNLOOPKIT_TAP": "1"]) { $1 }, in: directory)
        #expect(pingpong.waitForExit() == 0)
        #expect(sniff.waitForExit(timeout: 30) == 0)
        let lines = sniff.output.split(separator: "\n")
        let inOrder = lines.filter { !$0.contains("\"late\":true") }.compactMap { try? JSONDecoder().decode(PortTapEvent.self, from: Data($0.utf8)) }
        let late = lines.filter { $0.contains("\"late\":true") }.count
        #expect(inOrder.count >= 4 * roundTrips - 10, "\(late) events came late, \(4 * roundTrips - inOrder.count - late) never came")
        #expect(zip(inOrder, inOrder.dropFirst()).allSatisfy { $0.monotonicTime <= $1.monotonicTime }, "events out of time order")
        // The latency is on the DELIVER line of each pair, never on a SEND
        // (unless the SEND came later than the window: shown, marked late;
        // seen once under AddressSanitizer's load).
        #expect(lines.filter { $0.contains("\"latency_ns\"") && !$0.contains("\"late\":true") }.allSatisfy { $0.contains("\"kind\":\"deliver\"") })

        // Replayed: a recording whose DELIVER comes before its SEND.
        let path = directory + "/unordered.jsonl"
        try writeRecording([madeUpEvent(.deliver, seq: 2, index: 2, pid: 7, msgid: 5, trace: 0xab),
                            madeUpEvent(.send, seq: 1, index: 1, pid: 7, msgid: 5, trace: 0xab)], to: path)
        let replay = try SpawnedProgram("portsniff", ["--read", path, "--json"], in: directory)
        #expect(replay.waitForExit(timeout: 30) == 0)
        let replayed = replay.output.split(separator: "\n").map(String.init).dropFirst()  // the header line
        #expect(replayed.count == 2 && replayed.first!.contains("\"kind\":\"send\"") && replayed.last!.contains("\"kind\":\"deliver\"")
                && replayed.last!.contains("\"latency_ns\":1000000"), "\(replayed)")
    }

    @Test("portsniff -- COMMAND runs the program with the tap on, as strace does: every event of it, an exact summary, and portsniff exits with the program's status",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func runsACommand() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let roundTrips = 300
        let sniff = try SpawnedProgram("portsniff", ["--json", "--", SpawnedProgram.productsDirectory + "/pingpong", "--count", "\(roundTrips)"],
                                       environment: runtime, in: directory)
        #expect(sniff.waitForExit(timeout: 60) == 0, "\(sniff.errorOutput)")
        let events = decodeEvents(sniff.output)
        #expect(events.count == 4 * roundTrips)
        let pid = try #require(events.first?.pid)
        #expect(sniff.errorOutput.contains("pid \(pid) (pingpong, exited): events 1-\(4 * roundTrips) owed (\(4 * roundTrips)): \(4 * roundTrips) received + 0 dropped"),
                "\(sniff.errorOutput)")
        // The program's status is portsniff's.
        let failing = try SpawnedProgram("portsniff", ["--", "/bin/sh", "-c", "exit 3"], environment: runtime, in: directory)
        #expect(failing.waitForExit(timeout: 60) == 3, "\(failing.errorOutput)")
    }

    @Test("S-NET-4, S-TAP-1: portsniff -- cluster --loopback sees every process of the cluster like any other: the lookups and requests over tcp, each with its remote peer's endpoint, every send delivered, and no event dropped",
          .enabled(if: programsBuilt && SpawnedProgram.isBuilt("cluster"), "build the programs first: swift build (scripts/test.sh does)"))
    func sniffsTheCluster() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let requests = 20
        let sniff = try SpawnedProgram(
            "portsniff", ["--json", "--", SpawnedProgram.productsDirectory + "/cluster", "--loopback", "--requests", "\(requests)", "--dir", directory + "/cluster"],
            environment: runtime, in: directory)
        #expect(sniff.waitForExit(timeout: 120) == 0, "\(sniff.output) \(sniff.errorOutput)")
        let events = decodeEvents(sniff.output)
        // Four processes: the directory, two workers, the client.
        #expect(Set(events.map(\.pid)).count == 4, "\(Set(events.map(\.pid)))")
        // Each worker and the client looked the directory up at its endpoint.
        let lookups = events.filter { $0.kind == .send && $0.msgid == 1 && $0.destinationPeer?.contains("tcp://127.0.0.1:7100") == true }
        #expect(lookups.count >= 3, "\(lookups.map(\.destinationPeer))")
        // The client's requests, each to a worker's endpoint, and the replies.
        let squares = events.filter { $0.msgid == 3 }
        // A request goes to a worker's endpoint; its reply to the client's
        // reply port, which is reached over the client's connection only.
        let requestsSent = squares.filter { $0.kind == .send && $0.destinationPeer?.hasPrefix("tcp://127.0.0.1:") == true }
        #expect(requestsSent.count == requests, "\(requestsSent.count) of \(requests) requests with their peers")
        let requestsDelivered = squares.filter { $0.kind == .deliver && $0.sourcePeer?.hasPrefix("connecting only instance ") == true }
        #expect(requestsDelivered.count == requests, "each worker sees where a request came from")
        #expect(squares.filter { $0.kind == .deliver }.count == 2 * requests)
        #expect(sniff.errorOutput.contains("received + 0 dropped"), "\(sniff.errorOutput)")
    }

    @Test("portsniff's live view above --max-rate lines a second prints one summary line a second instead of every event, while --write records every event and the summary counts them all",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func busyLiveViewSummarises() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let roundTrips = 10_000
        let recording = directory + "/all.jsonl"
        let sniff = try SpawnedProgram(
            "portsniff", ["--max-rate", "100", "--write", recording, "--", SpawnedProgram.productsDirectory + "/pingpong", "--count", "\(roundTrips)"],
            environment: runtime, in: directory)
        #expect(sniff.waitForExit(timeout: 120) == 0, "\(sniff.errorOutput)")
        let lines = sniff.output.split(separator: "\n")
        let eventLines = lines.filter { $0.contains(" SEND ") || $0.contains(" DELIVER ") }
        let summaries = lines.filter { $0.contains("not shown as lines") && $0.contains("over 100 lines/s") }
        #expect(!summaries.isEmpty, "no summary line: \(lines.prefix(5))")
        // Each says how many events it stands for, over how long; together with the lines they are every event matched.
        let counted = summaries.compactMap { line in Int(line.split(separator: " ")[1]) }
        #expect(counted.count == summaries.count && summaries.allSatisfy { $0.range(of: #" events in \d+\.\d\d s "#, options: .regularExpression) != nil }, "\(summaries)")
        #expect(sniff.errorOutput.contains("  \(eventLines.count) shown as lines, \(counted.reduce(0, +)) only counted in rate lines (--max-rate)"),
                "\(eventLines.count) lines, \(counted.reduce(0, +)) counted: \(sniff.errorOutput)")
        // Every event received is recorded and counted, shown or summarised
        // (a reader slowed down, as under ThreadSanitizer, may miss some: counted).
        let summary = try #require(sniff.errorOutput.split(separator: "\n").first { $0.contains("pid ") && $0.contains("owed") })
        let received = try #require(Int(summary.split(separator: ":").last!.split(separator: " ").first!))
        #expect(summary.hasSuffix("owed (\(4 * roundTrips)): \(received) received + \(4 * roundTrips - received) dropped"), "\(summary)")
        #expect(SpawnedProgram.read(recording).split(separator: "\n").filter { !$0.hasPrefix(#"{"account":"#) }.count == 1 + received)
        #expect(eventLines.count < received / 2, "\(eventLines.count) event lines printed at a rate over the limit")
    }

    @Test("portsniff --json --count N records every message of pingpong, both directions, exactly",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func sniffPingpong() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let endpoint = "ipc://\(directory)/tap.sock"
        let roundTrips = 200
        let sniff = try SpawnedProgram("portsniff", ["--endpoint", endpoint, "--json", "--count", "\(4 * roundTrips)"], in: directory)
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        let pingpong = try SpawnedProgram("pingpong", ["--count", "\(roundTrips)"], environment: ["RUNLOOPKIT_TAP": endpoint], in: directory)
        #expect(pingpong.waitForExit() == 0, "pingpong failed: \(pingpong.errorOutput)")
        #expect(sniff.waitForExit(timeout: 30) == 0, "portsniff did not see all \(4 * roundTrips) events: \(sniff.errorOutput)")

        let events = decodeEvents(sniff.output)
        #expect(events.count == 4 * roundTrips)
        // Pings are msgid 1, pongs msgid 2; the data's first 8 bytes are the
        // round trip's sequence number (the tap shows the first 16 bytes).
        func sequence(_ event: PortTapEvent) -> Int? {
            guard event.head.count >= 8 else { return nil }
            return event.head.prefix(8).reversed().reduce(0) { $0 << 8 | Int($1) }
        }
        for kind in [PortTapEvent.Kind.send, .deliver] {
            for msgid: UInt32 in [1, 2] {
                let sequences = events.filter { $0.kind == kind && $0.msgid == msgid }.compactMap(sequence)
                #expect(sequences == Array(1...roundTrips), "\(kind) of msgid \(msgid): every round trip once, in order")
            }
        }
        // Both directions, on the right threads.
        #expect(events.filter { $0.kind == .deliver && $0.msgid == 1 }.allSatisfy { $0.thread == "pong" })
        #expect(events.filter { $0.kind == .deliver && $0.msgid == 2 }.allSatisfy { $0.thread == "ping" })
        #expect(events.filter { $0.kind == .send && $0.msgid == 1 }.allSatisfy { $0.thread == "ping" })
        #expect(events.filter { $0.kind == .send && $0.msgid == 2 }.allSatisfy { $0.thread == "pong" })
        let traces = Dictionary(grouping: events, by: { $0.trace ?? 0 })
        #expect(traces.count == 2 * roundTrips && traces.values.allSatisfy { Set($0.map(\.kind)) == [.send, .deliver] })
        #expect(events.allSatisfy { $0.pid == pingpong.pid && $0.process == "pingpong" })
        // Each pair gets its latency once, on its DELIVER line (or on a SEND later than the window).
        #expect(sniff.output.split(separator: "\n").filter { $0.contains("\"latency_ns\":") }.count == 2 * roundTrips,
                "every message seen at both ends shows its send-to-delivery latency once")
    }

    @Test("portsniff records the whole ipc-demo conversation between its two processes",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func sniffIPCDemo() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let endpoint = "ipc://\(directory)/tap.sock"
        // 4 requests and their 4 replies, and 3 notices: 11 messages, 22
        // events; and the send the demo shows failing (an inproc port to
        // another process), an event of its own.
        let sniff = try SpawnedProgram("portsniff", ["--endpoint", endpoint, "--json", "--count", "23"], in: directory)
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") })
        let demo = try SpawnedProgram("ipc-demo", [], environment: ["RUNLOOPKIT_TAP": endpoint], in: directory)
        #expect(demo.waitForExit() == 0, "ipc-demo failed: \(demo.output)")
        #expect(sniff.waitForExit(timeout: 30) == 0, "portsniff did not see all 23 events: \(sniff.errorOutput)")

        let events = decodeEvents(sniff.output)
        #expect(events.count == 23)
        #expect(events.filter { $0.kind == .sendFailed }.map { "\($0.msgid) \($0.reason ?? "-")" } == ["2 componentNotTransferable"])
        let expected: [UInt32] = [1, 1, 2, 2, 3, 3, 99, 99, 101, 102, 103]
        #expect(events.filter { $0.kind == .send }.map(\.msgid).sorted() == expected)
        #expect(events.filter { $0.kind == .deliver }.map(\.msgid).sorted() == expected)
        // Both directions: requests are sent by the client and delivered in the server, replies the other way.
        let senders = Set(events.filter { $0.kind == .send }.map(\.pid)), receivers = Set(events.filter { $0.kind == .deliver }.map(\.pid))
        #expect(senders.count == 2 && senders == receivers)
        for event in events where event.kind == .send && [1, 2, 3, 99].contains(event.msgid) && event.destination.hasPrefix("ipc-demo-") {
            #expect(events.contains { $0.kind == .deliver && $0.trace == event.trace && $0.pid != event.pid })
        }
        #expect(Dictionary(grouping: events.filter { $0.trace != nil }, by: { $0.trace! }).values.allSatisfy { $0.count == 2 })
        // Both processes by the program's name (the server is started through /proc/self/exe), as ps shows them.
        #expect(events.allSatisfy { $0.process == "ipc-demo" }, "\(Set(events.map { $0.process ?? "-" }))")
    }

    @Test("portsniff --read replays a --write recording through the same filters (--msgid, --pid) and views",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func recordAndReplay() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let endpoint = "ipc://\(directory)/tap.sock"
        let recording = directory + "/traffic.jsonl"
        // ipc-demo's 23 events (sniffIPCDemo).
        let sniff = try SpawnedProgram("portsniff", ["--endpoint", endpoint, "--count", "23", "--write", recording], in: directory)
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") })
        let demo = try SpawnedProgram("ipc-demo", [], environment: ["RUNLOOPKIT_TAP": endpoint], in: directory)
        #expect(demo.waitForExit() == 0)
        #expect(sniff.waitForExit(timeout: 30) == 0)
        #expect(sniff.output.split(separator: "\n").count == 23, "the live view prints one line per event")
        // The recording: a header line, then one event a line, no blank
        // line, keys in one (sorted) order, paths unescaped.
        let all = SpawnedProgram.read(recording).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(all.first == #"{"format":"portsniff-recording","sorted":true,"version":2,"window_ms":50}"#, "\(all.first ?? "")")
        // It ends with the sniffer's account of each process: all 23 received, none dropped.
        let accounts = all.filter { $0.hasPrefix(#"{"account":"#) }
        #expect(accounts.count == 2 && accounts.allSatisfy { $0.contains(#""dropped":0"#) } && all.suffix(2).elementsEqual(accounts), "\(accounts)")
        let lines = all.dropFirst().filter { !$0.hasPrefix(#"{"account":"#) }
        #expect(lines.count == 23 && lines.allSatisfy { !$0.isEmpty }, "\(lines.count) lines, blank ones included")
        let keys = ["components", "data_bytes", "destination", "head_hex", "kind", "msgid", "pid", "port_components", "process",
                    "seq", "started_ticks", "thread", "tid", "time_monotonic_ns", "time_unix_ns", "version"].map { "\"\($0)\"" }
        for line in lines {
            // Each key after the one before it.
            var from = line.startIndex
            let inOrder = keys.allSatisfy { key in
                guard let found = line.range(of: key, range: from..<line.endIndex) else { return false }
                from = found.upperBound
                return true
            }
            #expect(inOrder, "keys out of order: \(line)")
            #expect(!line.contains("\\/"), "an escaped slash: \(line)")
        }

        let replay = try SpawnedProgram("portsniff", ["--read", recording, "--json", "--msgid", "99"], in: directory)
        #expect(replay.waitForExit() == 0)
        let shutdown = decodeEvents(replay.output)
        #expect(shutdown.count == 4 && shutdown.allSatisfy { $0.msgid == 99 })
        let serverPid = try #require(shutdown.first { $0.kind == .deliver }?.pid)
        let onlyServer = try SpawnedProgram("portsniff", ["--read", recording, "--json", "--pid", "\(serverPid)", "--msgid", "99"], in: directory)
        #expect(onlyServer.waitForExit() == 0)
        #expect(decodeEvents(onlyServer.output).map(\.kind).sorted { $0.rawValue < $1.rawValue } == [.deliver, .send])
        let stats = try SpawnedProgram("portsniff", ["--read", recording, "--stats"], in: directory)
        #expect(stats.waitForExit() == 0)
        #expect(stats.output.contains("MSG/S") && stats.output.contains("P99") && stats.output.contains("ipc-demo-"))
    }
}
