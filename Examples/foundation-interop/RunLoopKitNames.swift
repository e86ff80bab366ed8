// Recipe 2 of README.md, "Beside Foundation": one file like
// this per client module. A declaration at module scope wins over imported
// ones, so in every file of this module, including files that import
// Foundation too, each name below means the type it aliases. The other one
// stays reachable qualified: `Foundation.RunLoop`, `Foundation.Port`...
//
// The names that clash, measured with Swift 6.3.1: in a file that imports
// Foundation and RunLoopKit (and ZeroMQ), these five, and only these, are
// "ambiguous for type lookup":
//   - RunLoop, Timer, Port, PortMessage: RunLoopKit's types have Foundation's
//     names, on purpose.
//   - URLResourceKey: RunLoopKit re-exports FoundationEssentials, which on
//     Linux declares an empty URLResourceKey of its own beside Foundation's.
//     This one is aliased to Foundation's: it has the keys, and it is the
//     type `URL.resourceValues(forKeys:)` takes.
// No alias is needed for RunLoopKit's other types (CustomSource,
// SocketSource, RunLoopObserver, RunLoopMonitor, RunLoopError, LoopThread,
// TestClock, PortError, PortNameServer, PortTap, PortTapEvent), for
// ZeroMQ's (Message, Socket, SocketType, SocketEvents, ZMQ, ZMQContext,
// ZMQError, SystemCallError, TimeoutError), or for the rest of FoundationEssentials (Date, Data, URL,
// TimeInterval...: one declaration, seen through both imports).
//
// To re-check after adding a public type or changing toolchains, run
// scripts/foundation-clashes.sh: it probes every public top-level name of
// RunLoopKit, ZeroMQ and FoundationEssentials in a file that imports
// Foundation, and fails unless this file and ModuleSelectors.swift cover
// exactly the names that clash.
import Foundation
import RunLoopKit

typealias RunLoop = RunLoopKit.RunLoop
typealias Timer = RunLoopKit.Timer
typealias Port = RunLoopKit.Port
typealias PortMessage = RunLoopKit.PortMessage
typealias URLResourceKey = Foundation.URLResourceKey
