// The wire fuzzer's corpus, replayed (docs/fuzzing.md): every input the
// fuzzer kept (Tests/FuzzCorpus) goes through the production decoders by
// the fuzzer's own entry, `WireFuzzing`, which traps when the record walk
// and the in-place decoder disagree. Together the inputs must reach every
// decode error and both descriptor versions: a corpus that stopped doing
// so would fuzz less than it claims. A finding of the fuzzer is added to
// the corpus, and so replayed here from then on.
import Foundation
import Testing
@testable import RunLoopKitPorts
import RunLoopKitTestSupport

@Suite("The wire fuzzer's corpus (S-PORT-7)", .blocksThreads)
struct WireFuzzCorpusTests {
    // Tests/<target>/Fuzzing/WireFuzzCorpusTests.swift → Tests/FuzzCorpus.
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("FuzzCorpus")

    static func inputs() throws -> [(name: String, bytes: Data)] {
        let names = try FileManager.default.contentsOfDirectory(atPath: corpus.path).filter { !$0.hasPrefix(".") }.sorted()
        return try names.map { ($0, try Data(contentsOf: corpus.appendingPathComponent($0))) }
    }

    @Test("S-PORT-7: the committed corpus decodes without a crash, the two decoders agreeing on every input, and reaches every DecodeError case and every descriptor version (4 in messages over a connection)")
    func corpusReachesEveryDecodeError() throws {
        let inputs = try Self.inputs()
        #expect(inputs.count >= 50, "the corpus at \(Self.corpus.path) looks lost: \(inputs.count) inputs")
        var reached = WireFuzzing.Outcome()
        for input in inputs {
            reached.merge(input.bytes.withUnsafeBytes { WireFuzzing.run($0) })
        }
        #expect(reached.errors == Set(WireFuzzing.errorNames), "missing: \(Set(WireFuzzing.errorNames).subtracting(reached.errors).sorted())")
        #expect(reached.descriptorVersions == [1, 2, 3, 4])
        #expect(reached.decodedMessages > 0)
        #expect(reached.refusedMessages > 0)
        #expect(reached.tapErrors == Set(WireFuzzing.tapErrorNames),
                "tap batches: missing \(Set(WireFuzzing.tapErrorNames).subtracting(reached.tapErrors).sorted())")
        #expect(reached.decodedBatches > 0)
        #expect(reached.payloadErrors == Set(WireFuzzing.payloadErrorNames),
                "typed payloads: missing \(Set(WireFuzzing.payloadErrorNames).subtracting(reached.payloadErrors).sorted())")
        #expect(reached.decodedPayloads > 0)
    }

    @Test("S-PORT-7: the documents' examples, in the fuzzer's input format, decode, both decoders agreeing, with a version-1 reply port")
    func documentExamplesDecode() throws {
        // The seeds as scripts/fuzz-seeds.py writes them, here by hand:
        // one message of each example's frames.
        for frames in [WireFormatTests.exampleFrames, [WireFormatTests.examplePacked]] {
            var input: [UInt8] = [0] + Self.littleEndian16(frames.count)
            for frame in frames { input += Self.littleEndian16(frame.count) + frame }
            let outcome = input.withUnsafeBytes { WireFuzzing.run($0) }
            #expect(outcome.decodedMessages == 1 && outcome.refusedMessages == 0)
            #expect(outcome.descriptorVersions == [1])
        }
    }

    @Test("S-PORT-7: an oversized frame in the input format is one byte over the frame limit, and five make a message over the message limit")
    func oversizedFramesReachTheLimits() {
        let oversized: [UInt8] = [0, 0x80]  // length 0, top bit set
        func input(components: Int) -> [UInt8] {
            let header: [UInt8] = Array("RLKP".utf8) + [1, 0] + Self.littleEndian16(components) + [7, 0, 0, 0]
                + Array(repeating: 0, count: components)
            return [0] + Self.littleEndian16(1 + components) + Self.littleEndian16(header.count) + header
                + Array(repeating: oversized, count: components).flatMap { $0 }
        }
        #expect(input(components: 1).withUnsafeBytes { WireFuzzing.run($0) }.errors == ["frameTooLarge"])
        #expect(input(components: 5).withUnsafeBytes { WireFuzzing.run($0) }.errors == ["messageTooLarge"])
    }

    @Test("S-PORT-8, a finding of the corpus: a descriptor that claims a known port's identity at another path gets a send right of its own, and later descriptors of the real port still resolve to the first")
    func claimedIdentityAtAnotherPathDoesNotRedirect() {
        // The corpus test once ran beside WireFormatTests in one process and
        // resolved, through the process's registry, a made-up descriptor with
        // the document example's pid, start time and port id at another
        // path; the example's own descriptor, decoded later, resolved to
        // that send right and its path. Now each fuzz input has a registry
        // of its own, and a registry tells ports apart by path as well.
        let registry = PortRegistry(watchesOwners: false)
        let real = PortAddress(pid: 4242, startTime: 987_654, portID: 3, ipcPath: "/run/user/1000/runloopkit/p4242-3.sock")
        let claimed = PortAddress(pid: 4242, startTime: 987_654, portID: 3, ipcPath: "/tmp/elsewhere.sock")
        let first = registry.resolve(real)
        let liar = registry.resolve(claimed)
        #expect(liar !== first)
        #expect(liar.address.ipcPath == "/tmp/elsewhere.sock")
        #expect(registry.resolve(real) === first)
        #expect(registry.resolve(real).address.ipcPath == real.ipcPath)
        #expect(liar != first, "two destinations compare unequal")
    }

    static func littleEndian16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
}
