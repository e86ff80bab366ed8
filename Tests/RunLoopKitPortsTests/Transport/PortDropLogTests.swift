// S-PORT-7's log: every drop is counted per reason, and logged at most once
// per port and reason a second, each line carrying how many drops it stands
// for and the first one's fault; drops waiting for their reason's second are
// logged within about a second of the last, quiet or not, and what is left
// unlogged when the port is invalidated and at exit. The child process installs a log handler that writes each line to a
// file (the only way to see what is logged at exit), and that reads the
// port's counts, which would wait forever if a library lock were held
// around the handler.
import Dispatch
import Glibc
import Logging
import Testing
import ZeroMQ
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

/// Writes each line to a file, and reads a port's counts first (see above).
struct FileLogHandler: LogHandler {
    let fd: Int32
    let probe: @Sendable () -> Void
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Sends every log line of this (child) process to `path`, after `probe`.
    static func logToFile(_ path: String, probe: @escaping @Sendable () -> Void) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0o600)
        LoggingSystem.bootstrap { _ in FileLogHandler(fd: fd, probe: probe) }
    }

    func log(event: LogEvent) {
        probe()
        let bytes = Array("\(event.message)\n".utf8)
        _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    }
}

@Suite("Drops logged per reason, at most one line a second (S-PORT-7)", .blocksThreads)
struct PortDropLogTests {
    /// Ports a child keeps until it exits.
    static let keptUntilExit = Locked<[Port]>([])

    /// The drops a line stands for, if it is a drop line of `port` for `reason`.
    static func drops(in line: Substring, reason: PortDropReason) -> UInt64? {
        guard line.contains("(\(reason))") else { return nil }
        guard let start = line.firstRange(of: "dropped ") else { return nil }
        return UInt64(line[start.upperBound...].prefix { $0.isNumber })
    }

    @Test("S-PORT-7: 5,000 messages with bad magic, 3,000 of version 4 and 2,000 with no handler set: each counted under its reason; at most one line per reason and second; the lines' counts add up to the drops once the port is invalidated (bad input) and once the process exits (no handler); the log handler runs with no library lock held")
    func dropsAreLoggedThinnedAndAddUp() async throws {
        let directory = try PortProcess.makeTemporaryDirectory("droplog")
        defer { PortProcess.removeTree(directory) }
        let logPath = directory + "/log"
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [logPath = logPath as String] in
            await PortChild.run {
                let watched = Locked<[Port]>([])
                FileLogHandler.logToFile(logPath) { for port in watched.withLock({ $0 }) { _ = port.dropCounts } }
                let started = MonotonicClock.now()
                // Bad input, then a good message to know it was all judged.
                let (thread, port, inbox, peer) = try PortMalformedInputTests.setUp(.inproc, "droplog-bad")
                watched.withLock { $0.append(port) }
                for _ in 0..<5_000 { try peer.send([RawWire.header(magic: Array("RLKX".utf8), msgid: 1)]) }
                for _ in 0..<3_000 { try peer.send([RawWire.header(version: 4, msgid: 1, kinds: [0]), Data("x".utf8)]) }
                try peer.send(PortMalformedInputTests.goodFrames(to: port, msgid: 0x600D))
                PortChild.check(inbox.waitForMsgid(0x600D), "the good message did not arrive")
                let counts = port.dropCounts
                PortChild.check(counts[.badMagic] == 5_000 && counts[.unsupportedVersion] == 3_000 && counts.total == 8_000,
                                "counts: \(counts)")
                port.invalidate()
                thread.stop()
                // No handler: a port scheduled without one, sent to by RunLoopKit.
                let silent = LoopThread(name: "droplog-silent")
                try silent.start()
                let deaf = try Port(transport: .inproc)
                watched.withLock { $0.append(deaf) }
                try deaf.schedule(in: try #require(silent.runLoop), forMode: .default)
                for index in 0..<2_000 { try deaf.send(msgid: UInt32(index), before: Date() + 10) }
                PortChild.check(waitUntil(timeout: 60) { deaf.dropCounts[.noHandler] == 2_000 }, "no-handler drops: \(deaf.dropCounts)")
                PortChild.report("seconds", Double(MonotonicClock.now() - started) / 1e9)
                // The process exits with `deaf` still open: its last line comes at exit.
                withExtendedLifetime((deaf, silent)) {}
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        let seconds = try #require(child.reports["seconds"].flatMap(Double.init), child.comment)
        let lines = SpawnedProgram.read(logPath).split(separator: "\n")
        for (reason, total) in [(PortDropReason.badMagic, 5_000), (.unsupportedVersion, 3_000), (.noHandler, 2_000)] {
            let counts = lines.compactMap { Self.drops(in: $0, reason: reason) }
            #expect(counts.reduce(0, +) == UInt64(total), "\(reason): the lines stand for \(counts.reduce(0, +)) of \(total): \(counts)")
            // One line a second at most, plus the flush.
            #expect(counts.count >= 2 && Double(counts.count) <= seconds + 2, "\(reason): \(counts.count) lines in \(seconds) s")
        }
        #expect(lines.contains { $0.contains("(no message handler) since the last line") }, "no line flushed at exit: \(lines)")
    }

    @Test("S-PORT-7: one line per reason and second, also when a drop's time was read before another thread made that second's line (the time is then earlier than the line's)")
    func aDropTimedBeforeTheLastLineMakesNoLine() {
        let account = DropAccount(portName: "clock-skew")
        let second: UInt64 = 1_000_000_000
        account.record(.badMagic, "first", at: 50 * second)
        #expect(account.unwrittenLineCount == 1)
        // Read its clock just before the line above was made, then took the lock.
        account.record(.badMagic, "late", at: 50 * second - 1)
        account.record(.badMagic, "within the second", at: 50 * second + second / 2)
        #expect(account.unwrittenLineCount == 1, "a second line within the second")
        account.record(.badMagic, "a second later", at: 51 * second)
        #expect(account.unwrittenLineCount == 2)
        #expect(account.counts[.badMagic] == 4)
    }

    @Test("S-PORT-7: a burst of malformed messages then quiet: the drops within the second after the first line are logged within about a second of the last, in one line with their count and the first one's fault, without the port's invalidation or another drop; invalidating the port then logs nothing again")
    func burstThenQuietIsLoggedWithinASecond() async throws {
        let directory = try PortProcess.makeTemporaryDirectory("droplog-quiet")
        defer { PortProcess.removeTree(directory) }
        let logPath = directory + "/log"
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [logPath = logPath as String] in
            await PortChild.run {
                FileLogHandler.logToFile(logPath) {}
                let (thread, port, inbox, peer) = try PortMalformedInputTests.setUp(.inproc, "droplog-quiet")
                // One drop logged at once; then, within its second, a first
                // drop of another fault and 498 like the first. The burst is
                // queued while the port's loop is held, and judged when it
                // is let go: in milliseconds, whatever the sends took (on a
                // loaded machine under ThreadSanitizer, 500 sends took more
                // than the second, and the burst's drops came in two lines).
                let holding = DispatchSemaphore(value: 0)
                let release = DispatchSemaphore(value: 0)
                try thread.perform {
                    holding.signal()
                    release.wait()
                }
                PortChild.check(holding.wait(timeout: .now() + 60) == .success, "the loop never ran the holding block")
                try peer.send([RawWire.header(version: 0, msgid: 1)])
                try peer.send([RawWire.header(version: 4, msgid: 1, kinds: [0]), Data("x".utf8)])
                for _ in 0..<498 { try peer.send([RawWire.header(version: 0, msgid: 1)]) }
                try peer.send(PortMalformedInputTests.goodFrames(to: port, msgid: 0x600D))
                release.signal()
                PortChild.check(inbox.waitForMsgid(0x600D), "the good message did not arrive")
                let quietFrom = MonotonicClock.now()  // every drop was judged: quiet from here
                PortChild.check(port.dropCounts[.unsupportedVersion] == 500, "counts: \(port.dropCounts)")
                func lines() -> [Substring] {
                    SpawnedProgram.read(logPath).split(separator: "\n").filter { $0.contains("(\(PortDropReason.unsupportedVersion))") }
                }
                func logged() -> UInt64 {
                    lines().compactMap { PortDropLogTests.drops(in: $0, reason: .unsupportedVersion) }.reduce(0, +)
                }
                // The wait is a safety net; the bound is what is asserted.
                let complete = waitUntil(timeout: 60) { logged() == 500 }
                let waited = Double(MonotonicClock.now() - quietFrom) / 1e9
                PortChild.check(complete, "the waiting drops were never logged: \(lines())")
                PortChild.report("waited", waited)
                let found = lines()
                PortChild.check(found.count == 2, "two lines expected: \(found)")
                PortChild.check(found.first?.contains("dropped 1 message (unsupported wire version): unsupported wire version 0") == true,
                                "the first line: \(found.first ?? "none")")
                PortChild.check(found.last?.contains("dropped 499 messages (unsupported wire version) since the last line, the first: unsupported wire version 4") == true,
                                "the waiting drops' line gives the first one's fault: \(found.last ?? "none")")
                PortChild.check(found.last?.hasSuffix("500 so far for this reason") == true, "\(found.last ?? "none")")
                port.invalidate()
                thread.stop()
                PortChild.check(lines().count == 2 && logged() == 500, "logged again at invalidation: \(lines())")
                // The port lives until the exit, its log's timer long fired:
                // under ./scripts/asan.sh, nothing of its may look leaked.
                PortDropLogTests.keptUntilExit.withLock { $0.append(port) }
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        // About a second after the first line; 5 s allows a loaded machine
        // under ThreadSanitizer, where before this rule nothing came at all.
        let waited = try #require(child.reports["waited"].flatMap(Double.init), child.comment)
        #expect(waited < 5, "the waiting drops were logged \(waited) s after the last")
        print("S-PORT-7: a burst's waiting drops were logged \(Int(waited * 1000)) ms after the quiet began")
    }
}
