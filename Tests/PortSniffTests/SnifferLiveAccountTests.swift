// S-TAP-1 live: portsniff's --stats and --top, run on pingpong, add up to
// the account the summary gives at the end (what the process's numbers and
// count file say it owed, received and dropped).
import Testing
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("portsniff live: --stats and --top add up to the summary's account", .blocksThreads)
struct SnifferLiveAccountTests {
    /// The summary's line for the one process: owed, received, dropped.
    static func account(_ errorOutput: String) throws -> (owed: Int, received: Int, dropped: Int) {
        let line = try #require(errorOutput.split(separator: "\n").first { $0.contains("(pingpong, exited): events 1-") }, "\(errorOutput)")
        let numbers = line.split { !$0.isNumber }.compactMap { Int($0) }
        // pid, 1, last owed, owed, received, dropped
        try #require(numbers.count == 6, "\(line)")
        return (numbers[3], numbers[4], numbers[5])
    }

    @Test("S-TAP-1: --stats tables' drops add up to the summary's, and the last says the same in all",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func statsAddUp() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let sniff = try SpawnedProgram(
            "portsniff", ["--stats", "--", SpawnedProgram.productsDirectory + "/pingpong", "--count", "20000"],
            environment: ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"], in: directory)
        #expect(sniff.waitForExit(timeout: 180) == 0, "\(sniff.errorOutput)")
        let account = try Self.account(sniff.errorOutput)
        #expect(account.owed == 80_000 && account.received + account.dropped == account.owed, "\(account)")
        let drops = sniff.output.split(separator: "\n").filter { $0.hasPrefix("tap events dropped: ") }
        let perTable = drops.compactMap { Int($0.dropFirst("tap events dropped: ".count).prefix { $0.isNumber }) }
        #expect(!drops.isEmpty && perTable.reduce(0, +) == account.dropped, "\(drops) against \(account)")
        #expect(drops.last?.hasSuffix(", \(account.dropped) in all") == true, "\(drops.last ?? "")")
        #expect(sniff.errorOutput.contains("  \(account.dropped) tap event(s) dropped\n"), "\(sniff.errorOutput)")
        // Every line of the tables (pingpong prints its own lines too).
        for line in sniff.output.split(separator: "\n") where !line.hasPrefix("pingpong") && !line.hasPrefix("mean") {
            #expect(line.count <= 80, "\(line.count) columns: \(line)")
        }
    }

    @Test("S-TAP-1: --top in a pipe, to the end of a program: the last table's process row, its threads and its header add up to the summary's account",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func topAddsUp() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let sniff = try SpawnedProgram(
            "portsniff", ["--top", "--", SpawnedProgram.productsDirectory + "/pingpong", "--count", "20000"],
            environment: ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"], in: directory)
        #expect(sniff.waitForExit(timeout: 180) == 0, "\(sniff.errorOutput)")
        let account = try Self.account(sniff.errorOutput)
        let lines = sniff.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let start = try #require(lines.lastIndex { $0.hasPrefix("portsniff --top - ") }, "\(sniff.output)")
        let last = Array(lines[start...])
        // Header: received, dropped (proven) and not yet received are the owed events.
        let sniffer = try #require(last.first { $0.hasPrefix("Sniffer: ") }, "\(last)")
        let figures = sniffer.replacingOccurrences(of: #"\([0-9.]+%\)"#, with: "", options: .regularExpression).split { !$0.isNumber }.compactMap { Int($0) }
        #expect(figures.first == account.received && figures.dropFirst().reduce(0, +) == account.dropped, "\(sniffer) against \(account)")
        // The process row's totals: what was received and proven missed, as
        // the header's first two figures; its thread rows add up to it.
        // Rows with every column ("(no traffic)" is none).
        func rows(_ title: String) -> [[String]] { SnifferTopTests.table(title, in: last).filter { $0.count >= 10 } }
        if let row = rows("PID").first {
            let events = try #require(Int(row[8])), drops = try #require(Int(row[9]))
            #expect(figures.count >= 2 && events - drops <= account.received && drops == figures[1], "\(row) against \(sniffer)")
            let threads = rows("TID").filter { $0.contains("(pingpong)") }
            let threadEvents = threads.compactMap { Int($0[$0.count - 2].trimmingCharacters(in: ["~"])) }
            #expect(threadEvents.count == threads.count && abs(threadEvents.reduce(0, +) - events) <= threads.count, "\(threads) against \(row)")
        } else {
            // Gone with its threads and ports: the program exited before the last table.
            #expect(rows("TID").isEmpty && SnifferTopTests.table("PORT", in: last).allSatisfy { $0.count < 9 }, "\(last)")
        }
    }
}
