import FoundationEssentials
import Glibc
import ZeroMQ
internal import CLinuxSupport
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A reader of the port traffic tap, as `portsniff` is one: a socket that
/// tapped processes report to, a thread that takes their batches off it as
/// they come, and the decoder of what they send (docs/tap-format.md).
///
/// By default it binds a socket of its own in the readers' directory
/// (`PortTap.readerEndpoint()`), where every process tapped with
/// `RUNLOOPKIT_TAP=1` finds it and sends it every event, as it sends every
/// other reader; or it binds the endpoint given, for processes tapped with
/// `RUNLOOPKIT_TAP=<endpoint>` or `PortTap.enable(endpoint:)`. An ipc
/// socket's file is made readable and writable by its user only, and is
/// removed by `close()`.
///
/// A tapped process never waits for its readers: a batch a reader's socket
/// cannot take is dropped for it (S-TAP-2). So the reader's own thread
/// (`rlk-tap-reader`) takes batches off the socket as fast as they come and
/// holds them, undecoded, until they are read, up to `maxHeldBytes`: a
/// reader slower than the traffic for a while (a terminal, a recording, a
/// debug build) falls behind without missing anything. Past that bound it
/// leaves them in the socket, whose queue fills, and the tap drops what
/// follows, which the reader sees as gaps in the numbers.
///
/// Thread rules: read from one thread at a time; schedule `makeSource` on
/// that thread's loop.
public final class PortTapReader: @unchecked Sendable {
    // @unchecked Sendable: `decoder` and `malformedBatches` are the reading
    // thread's (one at a time, as documented); the rest is behind `held`'s
    // lock, or set once.

    /// The endpoint the reader is bound to.
    public let endpoint: String
    /// How many bytes of batches the reader holds at most before it stops
    /// taking them off the socket.
    public let maxHeldBytes: Int
    private let socket: Socket
    private var decoder = PortTapDecoder()
    private let socketFile: String?
    private let thread: LoopThread
    /// Readable while batches wait to be read.
    private let signal: Int32

    private struct Held {
        var batches: [[Data]] = []
        var first = 0
        var bytes = 0
        var closed = false
        /// The receiving thread stopped taking batches (the bound was reached).
        var paused = false
    }

    private let held = Locked(Held())

    /// Batches that could not be read (not a tap batch, or of another
    /// version), since the reader was made: skipped and counted.
    public private(set) var malformedBatches = 0

    /// The default bound on the batches held: 256 MiB, over three million events.
    public static let defaultMaxHeldBytes = 256 << 20

    /// Binds a reader at `endpoint`, or at a new endpoint of its own in the
    /// readers' directory, and starts its receiving thread.
    /// - Throws: the runtime directory's errors; `.zeroMQ` if the endpoint
    ///   cannot be bound (another reader holds it); `.runLoop` if the thread
    ///   cannot start.
    public init(endpoint: String? = nil, maxHeldBytes: Int = PortTapReader.defaultMaxHeldBytes) throws(PortError) {
        let target: String
        if let endpoint { target = endpoint } else { target = try PortTap.readerEndpoint() }
        self.endpoint = target
        self.maxHeldBytes = max(maxHeldBytes, 1)
        do throws(ZMQError) {
            socket = try ZMQContext.shared.makeSocket(.pull)
            try socket.setLinger(milliseconds: 0)
            // The socket file is made 0600: the umask is the process's, so
            // it is changed for the bind alone.
            let previousMask = rlk_umask(0o177)
            defer { _ = rlk_umask(previousMask) }
            try socket.bind(target)
            socket.releaseOwnership()
        } catch {
            throw .zeroMQ(error)
        }
        socketFile = target.hasPrefix("ipc://") ? String(target.dropFirst("ipc://".count)) : nil
        signal = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        thread = LoopThread(name: "rlk-tap-reader")
        do throws(RunLoopError) {
            try thread.start()
            let source = SocketSource(socket: socket) { [unowned self] _, _ in takeWaiting() }
            socket.releaseOwnership()
            try thread.runLoop?.add(source, forMode: .default)
        } catch {
            close()
            throw .runLoop(error)
        }
    }

    deinit { close() }

    /// On the receiving thread: takes every batch waiting in the socket,
    /// until the bound is reached.
    private func takeWaiting() {
        defer { socket.releaseOwnership() }
        var tookAny = false
        while true {
            let room = held.withLock { held -> Bool in
                held.paused = held.bytes >= maxHeldBytes
                return !held.paused && !held.closed
            }
            guard room, let frames = try? socket.receiveMultipart(dontWait: true) else { break }
            let size = frames.reduce(0) { $0 + $1.count }
            held.withLock { held in
                held.batches.append(frames)
                held.bytes += size
            }
            tookAny = true
        }
        if tookAny {
            var one: UInt64 = 1
            _ = Glibc.write(signal, &one, 8)
        }
    }

    /// The next batch held, if any; resumes the receiving thread if it had
    /// paused at the bound and there is room again.
    private func nextHeld() -> [Data]? {
        let (frames, resume): ([Data]?, Bool) = held.withLock { held in
            guard held.first < held.batches.count else { return (nil, false) }
            let frames = held.batches[held.first]
            held.batches[held.first] = []
            held.first += 1
            held.bytes -= frames.reduce(0) { $0 + $1.count }
            // Compacted now and then: the array does not grow for ever.
            if held.first > 1024 && held.first * 2 > held.batches.count {
                held.batches.removeFirst(held.first)
                held.first = 0
            }
            let resume = held.paused && held.bytes < maxHeldBytes / 2
            if resume { held.paused = false }
            return (frames, resume)
        }
        // Held strongly until it runs: a weak reference made here and gone
        // after would leave the reader's side table unreachable to
        // LeakSanitizer while the reader lives on (SideTableAnchor says why).
        if resume { try? thread.perform { self.takeWaiting() } }
        return frames
    }

    /// Receives one batch: waits up to `timeout` seconds for one (nil: does
    /// not wait). Nil when none came.
    /// - Throws: `PortTapFormatError` when what came is not a batch this
    ///   reader reads (it is skipped; the next call reads the next one).
    public func receive(timeout: TimeInterval? = nil) throws(PortTapFormatError) -> PortTapBatch? {
        let deadline = MonotonicClock.instant(secondsFromNow: max(0, timeout ?? 0))
        var frames = nextHeld()
        while frames == nil, timeout != nil, MonotonicClock.now() < deadline {
            let left = Int32(clamping: (deadline - MonotonicClock.now()) / 1_000_000 + 1)
            var descriptor = pollfd(fd: signal, events: Int16(POLLIN), revents: 0)
            _ = poll(&descriptor, 1, left)
            var count: UInt64 = 0
            _ = Glibc.read(signal, &count, 8)
            frames = nextHeld()
        }
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

    /// A source for a run loop, signalled while batches wait: its handler
    /// should `receive()` until nil.
    public func makeSource(_ onReadable: @escaping @Sendable (PortTapReader) -> Void) -> SocketSource {
        SocketSource(fileDescriptor: signal) { [unowned self] _, fd in
            var count: UInt64 = 0
            _ = Glibc.read(fd, &count, 8)
            onReadable(self)
            // A handler that read only some (to keep its loop responsive)
            // is called again for the rest.
            if held.withLock({ $0.first < $0.batches.count }) {
                var one: UInt64 = 1
                _ = Glibc.write(fd, &one, 8)
            }
        }
    }

    /// Stops the receiving thread, closes the socket and removes its file;
    /// the batches held and not read are let go. Idempotent.
    public func close() {
        let first = held.withLock { held -> Bool in
            defer { held.closed = true }
            return !held.closed
        }
        guard first else { return }
        thread.stop()
        held.withLock { held in
            held.batches.removeAll()
            held.first = 0
            held.bytes = 0
        }
        socket.close()
        if let socketFile { unlink(socketFile) }
        Glibc.close(signal)
    }
}
