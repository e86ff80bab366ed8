// RunLoopKitCore: CFRunLoop / NSRunLoop semantics for threads on Linux: run
// loops, modes, sources, timers, observers, perform and LoopThread. Users
// import the umbrella, RunLoopKit, which re-exports this module.
//
// `import RunLoopKit` alone gives `Data`, `Date` and `TimeInterval`, with no
// ambiguity, because Foundation's essentials are re-exported here. A file
// that also imports the full `Foundation` sees two each of `RunLoop`,
// `Timer`, `Port`, `PortMessage` and, through this re-export,
// `URLResourceKey`: see README.md, "Beside Foundation", and
// scripts/foundation-clashes.sh, which measures the list.
@_exported import FoundationEssentials
// The causes that RunLoopError and PortError share are defined once, in the
// ZeroMQ module beside ZMQError; `import RunLoopKit` alone gives them.
@_exported import struct ZeroMQ.SystemCallError
@_exported import struct ZeroMQ.TimeoutError
@_exported import struct ZeroMQ.ZMQError
