@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Foundation's way to schedule a port: `RunLoop.add(_:forMode:)` and
/// `remove(_:forMode:)` (NSRunLoop `addPort:forMode:`), forwarding to the
/// port. Like Foundation's, they do not throw.
extension RunLoop {
    /// Receives `port`'s messages on this loop while it runs `mode`
    /// (NSRunLoop `addPort:forMode:`). Any thread. On a loop whose thread has
    /// exited it adds nothing, as for every other item (S-THR-3).
    ///
    /// Misuse traps with a message, since this form cannot throw: a send
    /// right (a port of another process or a port that arrived in a
    /// message), an invalid port, or a port already scheduled on another
    /// loop. Use `try port.schedule(in:forMode:)` to handle those as errors.
    public func add(_ port: Port, forMode mode: Mode) {
        do {
            try port.schedule(in: self, forMode: mode)
        } catch {
            preconditionFailure("RunLoop.add(_ port:forMode:): \(error). Use `try port.schedule(in:forMode:)` to handle this as an error.")
        }
    }

    /// Stops receiving `port`'s messages while this loop runs `mode`; they
    /// wait in the port (NSRunLoop `removePort:forMode:`). Any thread.
    public func remove(_ port: Port, forMode mode: Mode) {
        port.remove(from: self, forMode: mode)
    }
}
