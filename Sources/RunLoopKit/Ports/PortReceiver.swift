internal import CLinuxSupport
import Glibc
import Logging
import Synchronization
import ZeroMQ

/// The receiving half of a local port: a ZeroMQ PULL socket bound at the
/// port's inproc endpoint and at its ipc paths, read by the port's socket
/// source on its loop's thread, one message per pass (S-SRC1-1).
///
/// Input from any peer is checked against docs/wire-format.md before it
/// becomes a PortMessage: a malformed, truncated, oversized or wrong-version
/// message is read to its end, dropped, counted and logged, and the next one
/// is served (S-PORT-7). ZMQ_MAXMSGSIZE makes libzmq itself disconnect an
/// ipc peer that announces a frame over the limit.
final class PortReceiver: @unchecked Sendable {
    // @unchecked Sendable: the socket and scratch messages are used under
    // `lock` only: by the loop thread receiving, or by invalidate closing.
    let socket: Socket
    /// The port's address, for diagnostics.
    let address: PortAddress
    private let lock = Lock()
    // Guarded by lock.
    private var isClosed = false
    // Guarded by lock: the ipc paths bound, unlinked at close: libzmq closes
    // listeners later, on its own thread, and not at all if the process
    // exits first.
    private var ipcPaths: [String] = []
    // Guarded by lock: reused for every message, so receiving allocates only
    // the components it hands on.
    private let headerFrame = Message()
    private let frame = Message()
    // Guarded by lock: a message received ahead by `hasInput`, handed out next.
    private var readAhead: (PortMessage, UInt64?)?
    // Guarded by lock: the last port descriptor decoded and the port it named.
    private var lastDescriptor: [UInt8] = []
    private var lastPort: Port?
    private let dropped = Atomic<UInt64>(0)
    /// ZMQ_FD, read once at creation.
    let pollDescriptor: Int32

    /// Messages a port's receive queue holds before senders wait (ZMQ_RCVHWM).
    static let highWaterMark: Int32 = 1000
    private static let logger = Logger(label: "RunLoopKit.Port")
    /// umask is per process: binds that set it are serialised.
    private static let umaskLock = Lock()

    init(address: PortAddress) throws(PortError) {
        self.address = address
        do {
            socket = try ZMQContext.shared.makeSocket(.pull)
            try socket.setReceiveHighWaterMark(Self.highWaterMark)
            try socket.setMaxMessageSize(Int64(WireFormat.maxFrameBytes))
            try socket.setLinger(milliseconds: 0)
            try socket.bind(address.inprocEndpoint)
            pollDescriptor = try socket.fileDescriptor
        } catch {
            throw .zeroMQ(error)
        }
        if let path = address.ipcPath {
            PortRegistry.shared.cleanUpAtExit()
            do {
                try bindIPC(path)
            } catch {
                socket.close()
                throw error
            }
        }
        socket.releaseOwnership()
    }

    var droppedCount: UInt64 { dropped.load(ordering: .relaxed) }

    /// Counts a message dropped after decoding; returns the new count.
    func countDrop() -> UInt64 { dropped.wrappingAdd(1, ordering: .relaxed).newValue }

    /// Binds an ipc path, readable and writable by this user only: the umask
    /// is 0177 during the bind, so the socket file is never open to others,
    /// not even for a moment (S-PORT-6).
    func bindIPC(_ path: String) throws(PortError) {
        guard path.utf8.count <= WireFormat.maxIPCPathBytes else {
            throw .pathTooLong(path, limit: WireFormat.maxIPCPathBytes)
        }
        try lock.withLock { () throws(PortError) -> Void in
            guard !isClosed else { throw .invalidPort(path) }
            defer { socket.releaseOwnership() }
            try Self.umaskLock.withLock { () throws(PortError) -> Void in
                let previous = rlk_umask(0o177)
                defer { _ = rlk_umask(previous) }
                do throws(ZMQError) { try socket.bind("ipc://" + path) } catch { throw .zeroMQ(error) }
            }
            ipcPaths.append(path)
        }
    }

    func unbindIPC(_ path: String) {
        lock.withLock {
            guard !isClosed else { return }
            try? socket.unbind("ipc://" + path)
            socket.releaseOwnership()
            if ipcPaths.contains(path) { unlink(path) }
            ipcPaths.removeAll { $0 == path }
        }
    }

    /// On the loop thread: whether a message is waiting. The answer is a
    /// non-blocking receive of the next message, kept for `receive()`.
    /// No ZMQ_EVENTS read is needed when it finds nothing: a receive that
    /// finds the queue empty has libzmq process its pending commands, which
    /// empties ZMQ_FD and leaves libzmq's pipes marked "reader asleep", so
    /// the next message signals ZMQ_FD again and the loop wakes for it.
    /// (Reading ZMQ_EVENTS as well cost two more system calls a message.)
    func hasInput() -> Bool {
        lock.withLock {
            guard !isClosed else { return false }
            defer { socket.releaseOwnership() }
            if readAhead != nil { return true }
            guard let message = readOne() else { return false }
            readAhead = message
            return true
        }
    }

    /// At process exit: removes the socket files without touching libzmq
    /// (which may be mid-shutdown), so that no file outlives the process.
    func unlinkFilesAtExit() {
        lock.withLock { for path in ipcPaths { unlink(path) } }
    }

    /// Closes the socket (unbinding and unlinking its ipc files). Any thread.
    func close() {
        lock.withLock {
            guard !isClosed else { return }
            isClosed = true
            readAhead = nil
            lastPort = nil
            socket.close()
            for path in ipcPaths { unlink(path) }
            ipcPaths.removeAll()
        }
    }

    /// On the loop thread: receives and decodes one message, with its trace
    /// id if the sender's tap was on (its `sendPort` is for the port to set). Returns nil when there was nothing to
    /// read, or the message was dropped as malformed.
    func receive() -> (PortMessage, UInt64?)? {
        lock.withLock {
            guard !isClosed else { return nil }
            defer { socket.releaseOwnership() }
            if let message = readAhead {
                readAhead = nil
                return message
            }
            return readOne()
        }
    }

    /// Receives and decodes the next good message, dropping (and counting)
    /// malformed ones on the way; nil when the queue is empty. Lock held.
    private func readOne() -> (PortMessage, UInt64?)? {
        while true {
            do {
                guard try socket.receive(into: headerFrame, dontWait: true) else { return nil }
            } catch {
                Self.logger.error("port \(address): receive failed: \(error)")
                return nil
            }
            switch decode() {
            case let .success(decoded):
                return decoded
            case let .failure(error):
                let count = dropped.wrappingAdd(1, ordering: .relaxed).newValue
                // Every one is counted; the log is thinned so that a flood of
                // bad input cannot flood the log too.
                if count <= 10 || count % 1000 == 0 {
                    Self.logger.warning("port \(address): dropped malformed message #\(count): \(error)")
                }
            }
        }
    }

    /// Reads the rest of the message after its first frame (always to its
    /// end, so that a bad message never leaves frames behind) and checks it.
    private func decode() -> Result<(PortMessage, UInt64?), WireFormat.DecodeError> {
        let header: WireFormat.Header
        do {
            header = try headerFrame.withUnsafeBytes { bytes in try WireFormat.readHeader(bytes) }
        } catch let error as WireFormat.DecodeError {
            return .failure(skipRest(failure: error))
        } catch {
            return .failure(skipRest(failure: .badMagic))
        }
        if header.isPacked {
            // A packed message is one frame; frames after it make it malformed.
            let extraFrames = countRest()
            guard extraFrames == 0 else { return .failure(.frameCountMismatch(expected: 1, got: 1 + extraFrames)) }
            return decodePacked(header)
        }
        var failure: WireFormat.DecodeError?
        var totalBytes = headerFrame.count
        var message = PortMessage(msgid: header.msgid)
        message.components.reserveCapacity(header.componentCount)
        var frames = 1
        var hasMore = headerFrame.hasMore
        while hasMore {
            do {
                guard try socket.receive(into: frame, dontWait: true) else { break }
            } catch {
                failure = failure ?? .shortFrame("message: \(error)")
                break
            }
            hasMore = frame.hasMore
            let index = frames - 1  // component index of this frame
            frames += 1
            totalBytes += frame.count
            guard failure == nil else { continue }
            if frame.count > WireFormat.maxFrameBytes { failure = .frameTooLarge(frame.count); continue }
            if totalBytes > WireFormat.maxMessageBytes { failure = .messageTooLarge(totalBytes); continue }
            if index < header.componentCount {
                if header.kind(at: index) == WireFormat.kindData {
                    message.components.append(.data(frame.data))
                } else {
                    switch frame.withUnsafeBytes({ decodePort($0) }) {
                    case let .success(component): message.components.append(.port(component))
                    case let .failure(error): failure = error
                    }
                }
            } else if index == header.componentCount && header.hasReplyPort {
                switch frame.withUnsafeBytes({ decodePort($0) }) {
                case let .success(reply): message.replyPort = reply
                case let .failure(error): failure = error
                }
            }
        }
        if let failure { return .failure(failure) }
        guard frames == header.frameCount else { return .failure(.frameCountMismatch(expected: header.frameCount, got: frames)) }
        return .success((message, header.traceID))
    }

    /// A version 2 message: every component and the reply port in the header's frame.
    private func decodePacked(_ header: WireFormat.Header) -> Result<(PortMessage, UInt64?), WireFormat.DecodeError> {
        guard headerFrame.count <= WireFormat.maxFrameBytes else { return .failure(.frameTooLarge(headerFrame.count)) }
        var message = PortMessage(msgid: header.msgid)
        message.components.reserveCapacity(header.componentCount)
        do throws(WireFormat.DecodeError) {
            try headerFrame.withUnsafeBytes { (bytes) throws(WireFormat.DecodeError) -> Void in
                try WireFormat.readPackedRecords(bytes, header: header) { (index, record) throws(WireFormat.DecodeError) -> Void in
                    if index == header.componentCount {
                        message.replyPort = try decodePort(record).get()
                    } else if header.kind(at: index) == WireFormat.kindData {
                        message.components.append(.data(record.isEmpty ? Data() : Data(bytes: record.baseAddress!, count: record.count)))
                    } else {
                        message.components.append(.port(try decodePort(record).get()))
                    }
                }
            }
        } catch {
            return .failure(error)
        }
        return .success((message, header.traceID))
    }

    /// Reads and discards what is left of a message; returns `failure`.
    private func skipRest(failure: WireFormat.DecodeError) -> WireFormat.DecodeError {
        _ = countRest()
        return failure
    }

    /// Reads and discards the frames left of the message; returns how many.
    private func countRest() -> Int {
        var count = 0
        var hasMore = headerFrame.hasMore
        while hasMore {
            guard (try? socket.receive(into: frame, dontWait: true)) == true else { break }
            hasMore = frame.hasMore
            count += 1
        }
        return count
    }

    private func decodePort(_ bytes: UnsafeRawBufferPointer) -> Result<Port, WireFormat.DecodeError> {
        // The same reply port comes back message after message: skip the
        // registry for it (and keep its send channel open meanwhile).
        if let lastPort, bytes.elementsEqual(lastDescriptor) { return .success(lastPort) }
        do throws(WireFormat.DecodeError) {
            let address = try WireFormat.decodeDescriptor(bytes)
            let port = Port.resolve(address)
            lastDescriptor = Array(bytes)
            lastPort = port
            return .success(port)
        } catch {
            return .failure(error)
        }
    }
}
