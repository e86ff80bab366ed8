import FoundationEssentials
import Glibc
import ZeroMQ
internal import CLinuxSupport
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A reader of the port traffic tap, as `portsniff` is one: a socket that
/// tapped processes report to, and the decoder of what they send
/// (docs/tap-format.md).
///
/// By default it binds a socket of its own in the readers' directory
/// (`PortTap.readerEndpoint()`), where every process tapped with
/// `RUNLOOPKIT_TAP=1` finds it and sends it every event, as it sends every
/// other reader; or it binds the endpoint given, for processes tapped with
/// `RUNLOOPKIT_TAP=<endpoint>` or `PortTap.enable(endpoint:)`. An ipc
/// socket's file is made readable and writable by its user only, and is
/// removed by `close()`.
///
/// Thread rules: use a reader from one thread at a time (its socket is a
/// ZeroMQ socket); schedule its `makeSource` on that thread's loop.
public final class PortTapReader: @unchecked Sendable {
    // @unchecked Sendable: one thread at a time, as documented.

    /// The endpoint the reader is bound to.
    public let endpoint: String
    private let socket: Socket
    private var decoder = PortTapDecoder()
    private let socketFile: String?
    /// Batches that could not be read (not a tap batch, or of another
    /// version), since the reader was made: skipped and counted.
    public private(set) var malformedBatches = 0

    /// Binds a reader at `endpoint`, or at a new endpoint of its own in the
    /// readers' directory.
    /// - Throws: the runtime directory's errors; `.zeroMQ` if the endpoint
    ///   cannot be bound (another reader holds it).
    public init(endpoint: String? = nil) throws(PortError) {
        let target: String
        if let endpoint { target = endpoint } else { target = try PortTap.readerEndpoint() }
        self.endpoint = target
        do throws(ZMQError) {
            socket = try ZMQContext.shared.makeSocket(.pull)
            try socket.setLinger(milliseconds: 0)
            // The socket file is made 0600: the umask is the process's, so
            // it is changed for the bind alone.
            let previousMask = rlk_umask(0o177)
            defer { _ = rlk_umask(previousMask) }
            try socket.bind(target)
        } catch {
            throw .zeroMQ(error)
        }
        socketFile = target.hasPrefix("ipc://") ? String(target.dropFirst("ipc://".count)) : nil
    }

    deinit { close() }

    /// Receives one batch: waits up to `timeout` seconds for one (nil: does
    /// not wait). Nil when none came.
    /// - Throws: `PortTapFormatError` when what came is not a batch this
    ///   reader reads (it is skipped; the next call reads the next one).
    public func receive(timeout: TimeInterval? = nil) throws(PortTapFormatError) -> PortTapBatch? {
        let frames: [Data]?
        if let timeout {
            try? socket.setReceiveTimeout(milliseconds: Int32(clamping: Int((timeout * 1000).rounded(.up))))
            frames = try? socket.receiveMultipart()
        } else {
            frames = try? socket.receiveMultipart(dontWait: true)
        }
        socket.releaseOwnership()
        guard let frames else { return nil }
        do throws(PortTapFormatError) {
            return try decoder.decode(frames)
        } catch {
            malformedBatches += 1
            throw error
        }
    }

    /// The name of a process the reader has had a batch from.
    public func processName(pid: Int32, started: UInt64) -> String? { decoder.processName(pid: pid, started: started) }

    /// A source for a run loop, signalled when batches wait: its handler
    /// should `receive()` until nil.
    public func makeSource(_ onReadable: @escaping @Sendable (PortTapReader) -> Void) -> SocketSource {
        let made = SocketSource(socket: socket) { [unowned self] _, _ in onReadable(self) }
        socket.releaseOwnership()
        return made
    }

    /// Closes the socket and removes its file. Idempotent.
    public func close() {
        guard !socket.isClosed else { return }
        socket.close()
        if let socketFile { unlink(socketFile) }
    }
}
