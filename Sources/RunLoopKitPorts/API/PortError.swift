import Glibc
public import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Why a port operation failed. Every case says what happened and, where
/// there is one, what to do instead.
public enum PortError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The port was invalidated (S-PORT-5): nothing can be sent to it or
    /// received on it any more.
    case invalidPort(String)
    /// The process that owns the remote port has exited (S-PORT-5).
    case peerDied(pid: Int32, port: String)
    /// The tcp connection to the process that owns the remote port broke
    /// (S-NET-3): it died, its host or the link went down (heartbeats
    /// stopped), or another process listens at its address now. The send
    /// right is invalid for good; a new one (a new descriptor, a name
    /// looked up again) makes a new connection.
    case connectionLost(port: String, peer: String, reason: String)
    /// Nothing can receive through this port from here (S-PORT-8): an
    /// inproc port of another process, an ipc port of another host, an ipc
    /// path that is missing or refuses connections, or no connection made
    /// within `Port.connectionBound`. Decided on the first send, at once;
    /// the port is invalid from then on.
    case unreachable(String, reason: String)
    /// The deadline passed before the operation could finish. For a send,
    /// nothing was sent (S-PORT-4).
    case timedOut(TimeoutError)
    /// A port component or reply port cannot travel to the destination: an
    /// inproc-only port cannot be sent to another process (S-PORT-2).
    case componentNotTransferable(String)
    /// The message breaks a limit of the wire format (docs/wire-format.md).
    case messageTooLarge(String)
    /// A port name is not acceptable (S-PORT-6).
    case invalidName(String, reason: String)
    /// A live process already holds the name (S-PORT-6).
    case nameInUse(String, pid: Int32)
    /// No live process has registered the name.
    case nameNotFound(String)
    /// The process that held the name last (`pid`) has exited without
    /// letting it go: it was killed, or exited holding it. Nobody holds the
    /// name now; the next registration takes it over.
    case nameHolderDied(String, pid: Int32)
    /// An ipc socket path is longer than the 107 bytes a Unix socket address holds.
    case pathTooLong(String, limit: Int)
    /// The per-user runtime directory is missing, not ours, or open to others.
    case runtimeDirectoryUnsafe(path: String, reason: String)
    /// A key file of the network's security (S-NET-2) cannot be used: its
    /// directory or file is open to others or not this user's, it is
    /// missing, or it does not hold a key. Says which file and what to do.
    case keyFile(path: String, reason: String)
    /// Receiving needs a local port; this one is a send right to another port.
    case notLocal(String)
    /// A local port is scheduled in the modes of one loop only.
    case scheduledOnAnotherLoop(String)
    /// A typed payload could not be made of a value, or a reply is not the
    /// type asked for (`PayloadError` says which, and why).
    case payload(PayloadError)
    /// libzmq refused an operation.
    case zeroMQ(ZMQError)
    /// A system call failed.
    case systemCall(SystemCallError)
    /// The run-loop layer refused: an invalid interval, or a loop or
    /// LoopThread that is gone or could not start.
    case runLoop(RunLoopError)

    /// What happened and, where there is one, what to do.
    public var description: String {
        switch self {
        case let .invalidPort(port): "port \(port) is invalid: it was invalidated and can no longer send or receive"
        case let .peerDied(pid, port): "port \(port) is invalid: its process \(pid) has exited"
        case let .connectionLost(port, peer, reason): "port \(port) is invalid: the connection to \(peer) broke (\(reason))"
        case let .unreachable(port, reason): "port \(port) cannot be reached from this process: \(reason)"
        case let .timedOut(error): error.description
        case let .componentNotTransferable(reason): "component cannot be sent: \(reason)"
        case let .messageTooLarge(reason): "message too large: \(reason)"
        case let .invalidName(name, reason): "invalid port name '\(name)': \(reason)"
        case let .nameInUse(name, pid) where pid == getpid():
            "port name '\(name)' is already registered by this process (pid \(pid)): unregister it first (PortNameServer.unregister), or register another name"
        case let .nameInUse(name, pid): "port name '\(name)' is held by live process \(pid): pick another name, or stop that process"
        case let .nameNotFound(name): "no live process has registered the port name '\(name)'"
        case let .nameHolderDied(name, pid): "the port name '\(name)' is not held: process \(pid), which held it, has exited without releasing it (restart that server, or register the name again)"
        case let .pathTooLong(path, limit): "ipc socket path is \(path.utf8.count) bytes, over the \(limit)-byte limit of a Unix socket address: \(path) (point RUNLOOPKIT_RUNTIME_DIR or XDG_RUNTIME_DIR at a shorter directory, or use a shorter name)"
        case let .runtimeDirectoryUnsafe(path, reason): "runtime directory \(path) cannot be used: \(reason)"
        case let .keyFile(path, reason): "key file \(path) cannot be used: \(reason)"
        case let .notLocal(port): "port \(port) is a send right to another port: only a local port can receive"
        case let .scheduledOnAnotherLoop(port): "port \(port) is already scheduled on another run loop: a local port receives on one loop (any of its modes)"
        case let .payload(error): error.description
        case let .zeroMQ(error): error.description
        case let .systemCall(error): error.description
        case let .runLoop(error): error.description
        }
    }
}

extension PortError {
    /// The case, without its payload: what the tap reports of a failed
    /// send (`PortTapEvent.reason`), and what tests compare.
    package var caseName: String {
        switch self {
        case .invalidPort: "invalidPort"
        case .peerDied: "peerDied"
        case .connectionLost: "connectionLost"
        case .unreachable: "unreachable"
        case .timedOut: "timedOut"
        case .componentNotTransferable: "componentNotTransferable"
        case .messageTooLarge: "messageTooLarge"
        case .invalidName: "invalidName"
        case .nameInUse: "nameInUse"
        case .nameNotFound: "nameNotFound"
        case .nameHolderDied: "nameHolderDied"
        case .pathTooLong: "pathTooLong"
        case .runtimeDirectoryUnsafe: "runtimeDirectoryUnsafe"
        case .keyFile: "keyFile"
        case .notLocal: "notLocal"
        case .scheduledOnAnotherLoop: "scheduledOnAnotherLoop"
        case .payload: "payload"
        case .zeroMQ: "zeroMQ"
        case .systemCall: "systemCall"
        case .runLoop: "runLoop"
        }
    }
}
