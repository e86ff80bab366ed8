// Helpers for the traffic-tap tests: decoding portsniff's JSON events
// (SpawnedProgram and makeTemporaryDirectory, in RunLoopKitTestSupport, run
// the programs).
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import ZeroMQ

/// Decodes portsniff --json output, one event per line.
func decodeEvents(_ text: String) -> [PortTapEvent] {
    let decoder = JSONDecoder()
    return text.split(separator: "\n").compactMap { try? decoder.decode(PortTapEvent.self, from: Data($0.utf8)) }
}
