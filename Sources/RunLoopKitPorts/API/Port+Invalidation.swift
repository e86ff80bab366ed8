import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Invalidation (S-PORT-5): closing a port, telling its handlers
/// (NSPortDidBecomeInvalid), and the error it then throws.
extension Port {
    /// Closes the port: a local port stops receiving, its socket and names
    /// are released, and sends to it fail with `.invalidPort`. Its
    /// invalidation handlers run once, on the calling thread; then its
    /// message handler is released (a handler set later is not kept), so
    /// that what the handler holds, the port included, can be freed.
    /// Idempotent.
    public func invalidate() { invalidate(because: nil) }

    func invalidate(because reason: PortError?) {
        invalidateDeferringHandlers(because: reason)
        runPendingInvalidationHandlers()
    }

    /// Invalidates the port but keeps its handlers waiting, for a caller
    /// that holds a lock (a send channel's, which learns there that the
    /// peer died): no user code runs under a library lock
    /// (docs/design.md, "Locks and user code"). That caller runs them with
    /// `runPendingInvalidationHandlers()` once the lock is released; so
    /// does any later `invalidate`.
    func invalidateDeferringHandlers(because reason: PortError?) {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        let (source, names): (SocketSource?, [String]) = state.withLock { state in
            state.lifecycle = .invalidated(reason ?? .invalidPort(description))
            state.pendingInvalidationHandlers += state.invalidationHandlers.map(\.body)
            defer {
                state.invalidationHandlers.removeAll()
                state.registeredNames.removeAll()
            }
            return (state.source, state.registeredNames)
        }
        source?.invalidate()
        receiver?.close()
        for name in names { PortNameServer.release(name) }
        if isLocal { PortRegistry.shared.removeLocal(address) }
    }

    /// Runs the handlers an invalidation left waiting, each once, on the
    /// calling thread, which holds no library lock.
    func runPendingInvalidationHandlers() {
        let handlers = state.withLock { state in
            defer { state.pendingInvalidationHandlers.removeAll() }
            return state.pendingInvalidationHandlers
        }
        for handler in handlers { handler(self) }
        // The message handler can never run again: let it go (and what it
        // holds: a handler that keeps messages keeps this port, which is
        // their receivePort), here, where no library lock is held.
        if isLocal && !isValid { setHandler(nil) }
        // Drops not yet in a log line are logged now, with no lock held.
        receiver?.drops.flush()
    }

    /// Runs `body` once when the port becomes invalid (NSPortDidBecomeInvalid),
    /// on the thread that invalidates it (for a dead peer, RunLoopKit's
    /// process-watcher thread). If the port is already invalid, runs it now,
    /// on the calling thread, and returns a token that removes nothing.
    /// Any thread.
    /// - Returns: a token for `removeInvalidationHandler(_:)`.
    @discardableResult
    public func addInvalidationHandler(_ body: @escaping @Sendable (Port) -> Void) -> InvalidationHandlerToken {
        let token: InvalidationHandlerToken? = state.withLock { state in
            guard case .open = state.lifecycle else { return nil }
            state.nextHandlerID += 1
            let token = InvalidationHandlerToken(id: state.nextHandlerID)
            state.invalidationHandlers.append((token, body))
            return token
        }
        guard let token else {
            body(self)
            return InvalidationHandlerToken(id: 0)
        }
        return token
    }

    /// Removes a handler added with `addInvalidationHandler(_:)`; a handler
    /// that already ran, or a token of another port, removes nothing. Any thread.
    public func removeInvalidationHandler(_ token: InvalidationHandlerToken) {
        state.withLock { $0.invalidationHandlers.removeAll { $0.token == token } }
    }

    /// Names one invalidation handler of one port, for
    /// `removeInvalidationHandler(_:)`.
    public struct InvalidationHandlerToken: Hashable, Sendable {
        fileprivate let id: UInt64
    }
}
