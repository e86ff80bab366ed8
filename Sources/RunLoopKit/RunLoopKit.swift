// RunLoopKit: CFRunLoop / NSRunLoop semantics and NSMachPort-like ports for
// threads on Linux.
//
// The umbrella has no symbols of its own: it re-exports the run-loop core
// (RunLoopKitCore) and the ports (RunLoopKitPorts), so that `import
// RunLoopKit` is all a user writes, and `RunLoopKit.RunLoop`,
// `RunLoopKit::RunLoop` and `typealias Port = RunLoopKit.Port` resolve
// through it. docs/design.md ("Modules") says why the modules are cut so.
@_exported import RunLoopKitCore
@_exported import RunLoopKitPorts
