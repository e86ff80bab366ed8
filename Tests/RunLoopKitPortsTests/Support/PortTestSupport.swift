// Helpers for the in-process port tests: API/ (PortMessageTests and the
// other Port*Tests), WireFormatTests and PortMalformedInputTests.
//
// Every test makes its own LoopThreads and ports, so that tests running in
// parallel never share a loop or a port. Handlers run on loop threads; they
// only record (`PortInbox`), and the test checks the record on its own thread.
import Dispatch
import Glibc
import Testing
import ZeroMQ
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

// MARK: - Waiting on a condition

/// A value guarded by a mutex and a condition variable: writers change it
/// and wake the waiters, a test waits until a predicate holds (with a
/// deadline as safety net). Waiting this way needs no polling and no sleep.
final class CondLocked<Value>: @unchecked Sendable {
    // @unchecked Sendable: `storage` is only touched with `mutex` held.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    // Guarded by mutex.
    private var storage: Value

    init(_ value: Value) {
        storage = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Changes the value and wakes every waiter.
    func update<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(condition)
            pthread_mutex_unlock(mutex)
        }
        return try body(&storage)
    }

    func read<R>(_ body: (Value) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(storage)
    }

    var value: Value { read { $0 } }

    /// Waits until `predicate` holds, at most `timeout` seconds; returns
    /// whether it held.
    @discardableResult
    func wait(timeout: Double = 30, until predicate: (Value) -> Bool) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanoseconds = Int(now.tv_nsec) + Int((timeout - timeout.rounded(.down)) * 1e9)
        var deadline = timespec(tv_sec: now.tv_sec + Int(timeout) + nanoseconds / 1_000_000_000,
                                tv_nsec: nanoseconds % 1_000_000_000)
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !predicate(storage) {
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { return predicate(storage) }
        }
        return true
    }
}

// MARK: - Collecting what a port delivers

/// What a port's handler saw: the message, the kernel thread it ran on and
/// the mode its loop was running.
struct PortDelivery: Sendable {
    let message: PortMessage
    let threadID: Int32
    let mode: RunLoop.Mode?
}

/// Records every message a port delivers; the test waits for a count.
final class PortInbox: Sendable {
    private let deliveries = CondLocked<[PortDelivery]>([])

    /// The handler to give `Port.setMessageHandler`.
    var handler: @Sendable (PortMessage) -> Void {
        { [self] message in record(message) }
    }

    func record(_ message: PortMessage) {
        let delivery = PortDelivery(message: message, threadID: ThreadIdentity.currentTID,
                                    mode: RunLoop.existingForCurrentThread?.currentMode)
        deliveries.update { $0.append(delivery) }
    }

    var all: [PortDelivery] { deliveries.value }
    var messages: [PortMessage] { deliveries.read { $0.map(\.message) } }
    var msgids: [UInt32] { deliveries.read { $0.map(\.message.msgid) } }
    var count: Int { deliveries.read { $0.count } }

    /// Waits until at least `count` messages arrived; true if they did.
    @discardableResult
    func waitForCount(_ count: Int, timeout: Double = 30) -> Bool {
        deliveries.wait(timeout: timeout) { $0.count >= count }
    }

    /// Waits until a message with `msgid` arrived; true if it did.
    @discardableResult
    func waitForMsgid(_ msgid: UInt32, timeout: Double = 30) -> Bool {
        deliveries.wait(timeout: timeout) { $0.contains { $0.message.msgid == msgid } }
    }
}

// MARK: - Threads, ports, deadlines

/// A started LoopThread; stop it at the end of the test (`defer`).
func makePortLoopThread(_ name: String) throws -> (thread: LoopThread, loop: RunLoop) {
    let thread = LoopThread(name: name)
    try thread.start()
    return (thread, try #require(thread.runLoop))
}

/// The set-up most port tests start from: a fresh LoopThread with one port
/// scheduled on it in `mode`, collecting what arrives in `inbox`. `close()`
/// invalidates the port and stops the thread.
struct InboxPort {
    let thread: LoopThread
    let loop: RunLoop
    let port: Port
    let inbox = PortInbox()

    init(_ name: String, transport: Port.Transport = .inproc, mode: RunLoop.Mode = .default) throws {
        (thread, loop) = try makePortLoopThread(name)
        do {
            port = try Port(transport: transport)
            port.setMessageHandler(inbox.handler)
            try port.schedule(in: loop, forMode: mode)
        } catch {
            thread.stop()
            throw error
        }
    }

    func close() {
        port.invalidate()
        thread.stop()
    }
}

/// A send deadline `seconds` from now.
func portDeadline(_ seconds: Double = 10) -> Date { Date() + seconds }


/// What `body` threw as a PortError, nil if it returned; any other error is
/// reported as an issue.
func portErrorThrown(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> PortError? {
    do {
        try body()
        return nil
    } catch let error as PortError {
        return error
    } catch {
        Issue.record("expected a PortError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// The async variant of `portErrorThrown`.
func portErrorThrown(
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
) async -> PortError? {
    do {
        try await body()
        return nil
    } catch let error as PortError {
        return error
    } catch {
        Issue.record("expected a PortError, got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Sends msgid 0, 1, 2, ... to `port` until a send fails with `.timedOut`
/// (each send may wait `wait` seconds for room). Returns how many were
/// accepted and how long the failing send took. Throws on any other error,
/// or if the port never fills (its queue would then be unbounded).
func fillUntilTimeout(_ port: Port, wait: Double = 0.05, limit: Int = 200_000) throws -> (accepted: Int, failedAfter: Double) {
    for index in 0..<limit {
        let start = MonotonicClock.now()
        do {
            try port.send(msgid: UInt32(index), before: Date() + wait)
        } catch .timedOut {
            return (index, MonotonicClock.seconds(MonotonicClock.now() - start))
        }
    }
    throw TestFailure("\(limit) sends to an unread port were all accepted: its queue has no bound")
}

/// Writes one line to fd 2, unbuffered: how an exit test's child reports to the test.
func reportToParent(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        if written <= 0 { break }
        offset += written
    }
}

/// What an exit test's child reported with `reportToParent`: the last line
/// of its standard error that starts with `prefix`, read as `name=value`
/// integers, and the line itself, to comment the test's expectations.
func childReport(_ result: ExitTest.Result?, prefix: String) throws -> (numbers: [String: Int], line: Comment) {
    let output = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
    let line = try #require(output.split(separator: "\n").last { $0.hasPrefix(prefix) }, "no report in: \(output)")
    var numbers: [String: Int] = [:]
    for field in line.dropFirst(prefix.count).split(separator: " ") {
        let parts = field.split(separator: "=")
        if parts.count == 2, let value = Int(parts[1]) { numbers[String(parts[0])] = value }
    }
    return (numbers, Comment(rawValue: String(line)))
}

// MARK: - Raw wire bytes, built from docs/wire-format.md (not from WireFormat)

enum RawWire {
    static func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        withUnsafeBytes(of: value.littleEndian) { Array($0) }
    }

    /// A header frame: magic, version, flags, count (defaults to kinds.count), msgid, kinds.
    static func header(
        magic: [UInt8] = Array("RLKP".utf8), version: UInt8 = 1, flags: UInt8 = 0,
        count: UInt16? = nil, msgid: UInt32, kinds: [UInt8] = []
    ) -> Data {
        Data(magic + [version, flags] + littleEndian(count ?? UInt16(kinds.count)) + littleEndian(msgid) + kinds)
    }

    /// A packed (version 2) frame: a header of version 2 whose kinds (and
    /// reply flag) describe `records`, then each record as a length and its bytes.
    static func packed(flags: UInt8 = 0, msgid: UInt32, kinds: [UInt8], records: [Data]) -> Data {
        var frame = header(version: 2, flags: flags, msgid: msgid, kinds: kinds)
        for record in records { frame += littleEndian(UInt32(record.count)) + record }
        return frame
    }

    /// A version-3 extension area: its length, then each field as a type,
    /// a length and its bytes.
    static func extensionArea(_ fields: [(type: UInt16, bytes: [UInt8])], length: UInt32? = nil) -> [UInt8] {
        let body = fields.flatMap { littleEndian($0.type) + littleEndian(UInt16($0.bytes.count)) + $0.bytes }
        return littleEndian(length ?? UInt32(body.count)) + body
    }

    /// A destination field's 24 bytes: the instance's high and low halves, then the port id.
    static func destination(high: UInt64, low: UInt64, portID: UInt64) -> [UInt8] {
        littleEndian(high) + littleEndian(low) + littleEndian(portID)
    }

    /// A packed version-3 frame: the header, the extension area, the records.
    static func packedV3(msgid: UInt32, kinds: [UInt8], extensionArea: [UInt8], records: [Data]) -> Data {
        var frame = header(version: 3, msgid: msgid, kinds: kinds) + extensionArea
        for record in records { frame += littleEndian(UInt32(record.count)) + record }
        return frame
    }

    /// A packed version-3 message of one data component, as a tcp send
    /// writes it (`WireFormat.extendPacked`): for raw tcp peers in tests.
    static func tcpMessage(to destination: WireFormat.Destination, msgid: UInt32, data: [UInt8] = [], replyDescriptor: [UInt8]? = nil) -> [UInt8] {
        let gap = WireFormat.destinationAreaSize
        var frame = [UInt8](repeating: 0, count: gap + 512 + data.count)
        let size = frame.withUnsafeMutableBytes { buffer in
            let written = data.withUnsafeBytes { bytes in
                WireFormat.writePacked(into: UnsafeMutableRawBufferPointer(rebasing: buffer[gap...]), msgid: msgid, bytes: bytes,
                                       replyDescriptor: replyDescriptor, traceID: nil)
            }
            WireFormat.extendPacked(buffer, destination: destination)
            return gap + written
        }
        return Array(frame[..<size])
    }

    /// A descriptor frame; `pathLength` defaults to the path's length.
    static func descriptor(
        magic: [UInt8] = Array("RLKD".utf8), version: UInt8 = 1, transport: UInt8,
        pathLength: UInt16? = nil, pid: Int32, startTime: UInt64, portID: UInt64, path: [UInt8] = []
    ) -> Data {
        Data(magic + [version, transport] + littleEndian(pathLength ?? UInt16(path.count))
            + littleEndian(UInt32(bitPattern: pid)) + littleEndian(startTime) + littleEndian(portID) + path)
    }

    /// The well-formed descriptor of a port of this process.
    static func descriptor(of port: Port) -> Data {
        let address = port.address
        return descriptor(transport: address.ipcPath == nil ? 0 : 1, pid: address.pid, startTime: address.startTime,
                          portID: address.portID, path: Array((address.ipcPath ?? "").utf8))
    }
}

/// A raw PULL socket standing where a port of this process would be, at an
/// id no port has, and a send right to that address: what `Port.send` puts
/// on the wire arrives at the socket, frame by frame. Close the socket.
func standInReceiver() throws -> (pull: Socket, destination: Port) {
    let process = ProcessIdentity.current
    let address = PortAddress(pid: process.pid, startTime: process.startTime,
                              portID: (1 << 62) + UInt64.random(in: 0..<(1 << 40)), ipcPath: nil)
    let pull = try ZMQContext.shared.makeSocket(.pull)
    try pull.setReceiveTimeout(milliseconds: 30_000)
    try pull.bind(address.inprocEndpoint)
    return (pull, Port(sendRightTo: address))
}

/// A foreign sender: a raw ZeroMQ PUSH socket connected to a port's endpoint,
/// used by the test's thread only.
final class RawPortPeer {
    let socket: Socket

    /// Connects to `endpoint` (inproc endpoints need the shared context).
    init(endpoint: String) throws {
        socket = try ZMQContext.shared.makeSocket(.push)
        try socket.setLinger(milliseconds: 0)
        try socket.connect(endpoint)
    }

    /// Sends one multipart message, waiting for room if need be.
    func send(_ frames: [Data]) throws {
        guard try socket.sendMultipart(frames) else { throw TestFailure("the raw peer could not send") }
    }

    deinit { socket.close() }
}
