// portsniff with distributed actors: the example `distributed` run under
// it, each call and its reply shown by method (docs/tap-format.md, "Actor
// calls"), live and in a recording.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("portsniff: distributed actor calls", .blocksThreads)
struct SnifferActorCallTests {
    static let built = SpawnedProgram.isBuilt("portsniff") && SpawnedProgram.isBuilt("distributed")

    @Test("S-TAP-1: portsniff -- distributed shows each actor call and its reply by method, call number, actor and outcome, at both ends and paired; --json records them as actor_call, a typed error's reply and a cancellation included",
          .enabled(if: built, "build the programs first: swift build (scripts/test.sh does)"))
    func callsShownByMethod() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let program = SpawnedProgram.productsDirectory + "/distributed"

        let recorded = try SpawnedProgram("portsniff", ["--json", "--", program, "--count", "2"], environment: runtime, in: directory)
        #expect(recorded.waitForExit(timeout: 60) == 0, "\(recorded.errorOutput)")
        // In time order whatever the machine's load (an event later than
        // the reorder window comes out late).
        let calls = decodeEvents(recorded.output).sorted { $0.monotonicTime < $1.monotonicTime }
            .compactMap { event in event.actorCall.map { (event, $0) } }
        let take = calls.filter { $0.1.method == "Kitchen.take(_:)" }
        // Three calls of take (two orders and a sold-out one), each sent,
        // delivered, answered and its answer delivered; paired by trace id.
        #expect(take.count == 12, "\(take.map(\.1))")
        for id in Set(take.map(\.1.id)) {
            let one = take.filter { $0.1.id == id }
            #expect(one.map { "\($0.0.kind.rawValue) \($0.1.role.rawValue)" } == ["send call", "deliver call", "send reply", "deliver reply"])
            #expect(one[0].0.trace == one[1].0.trace && one[2].0.trace == one[3].0.trace)
        }
        #expect(take.filter { $0.1.role == .reply }.map(\.1.outcome).sorted { $0.rawValue < $1.rawValue } == [.typedError, .typedError, .value, .value, .value, .value])
        #expect(calls.contains { $0.0.kind == .deliver && $0.1.role == .cancellation && $0.1.method == "Kitchen.slowRoast()" })

        let live = try SpawnedProgram("portsniff", ["--", program, "--count", "1"], environment: runtime, in: directory)
        #expect(live.waitForExit(timeout: 60) == 0, "\(live.errorOutput)")
        let lines = live.output.split(separator: "\n")
        #expect(lines.contains { $0.contains("SEND") && $0.contains("call #1 Kitchen.take(_:) actor 1") }, "\(live.output)")
        #expect(lines.contains { $0.contains("DELIVER") && $0.contains("reply #1 Kitchen.take(_:) value") }, "\(live.output)")
        #expect(lines.contains { $0.contains("reply #2 Kitchen.take(_:) typedError") }, "\(live.output)")
        #expect(lines.contains { $0.contains("cancel #3 Kitchen.slowRoast()") }, "\(live.output)")
    }
}
