// RunLoopKit: CFRunLoop / NSRunLoop semantics for threads on Linux.
//
// `import RunLoopKit` alone gives `Data`, `Date` and `TimeInterval`, with no
// ambiguity, because Foundation's essentials are re-exported here (DESIGN.md,
// Names). A file that also imports the full `Foundation` sees two `RunLoop`s
// and two `Timer`s (and `Port`s, `PortMessage`s): see README.md, "Beside Foundation".
@_exported import FoundationEssentials
// The causes that RunLoopError and PortError share are defined once, in the
// ZeroMQ module beside ZMQError; `import RunLoopKit` alone gives them.
@_exported import struct ZeroMQ.SystemCallError
@_exported import struct ZeroMQ.TimeoutError
@_exported import struct ZeroMQ.ZMQError
