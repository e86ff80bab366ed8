internal import CZeroMQ
public import FoundationEssentials
internal import Glibc

/// One ZeroMQ frame: a reusable `zmq_msg_t`.
///
/// Receiving into the same `Message` again and again (``Socket/receive(into:dontWait:)``)
/// allocates nothing on the Swift side, and nothing at all for small frames, which libzmq
/// keeps inline in the `zmq_msg_t` (up to 33 bytes on 64-bit). Each receive releases the
/// previous frame's content first.
///
/// Thread rules: not `Sendable`. A `Message` is mutable state shared with libzmq; keep it
/// on one thread, like the socket it is used with.
public final class Message {
    /// The `zmq_msg_t`, allocated once so that its address stays put: libzmq keeps
    /// pointers into it for inline frames.
    let pointer: UnsafeMutablePointer<zmq_msg_t>

    /// An empty frame (`zmq_msg_init`), ready to receive into.
    ///
    /// Thread rules: any thread; the message then stays on the thread that uses it.
    /// Never fails: `zmq_msg_init` only zeroes the struct.
    public init() {
        pointer = .allocate(capacity: 1)
        // zmq_msg_init cannot fail: it only zeroes the struct.
        zmq_msg_init(pointer)
    }

    /// A frame holding a copy of `bytes` (`zmq_msg_init_size` and a copy).
    ///
    /// Thread rules: any thread; the message then stays on the thread that uses it.
    /// - Parameter bytes: the contents; may be empty.
    /// - Precondition: memory is available; like any Swift allocation, running out of
    ///   memory stops the process (`zmq_msg_init_size` fails only with `ENOMEM`).
    public init(bytes: UnsafeRawBufferPointer) {
        pointer = .allocate(capacity: 1)
        guard zmq_msg_init_size(pointer, bytes.count) == 0 else {
            let error = ZMQError.last("zmq_msg_init_size(\(bytes.count))")
            pointer.deallocate()
            fatalError("ZeroMQ: \(error)")
        }
        if let source = bytes.baseAddress, bytes.count > 0 {
            zmq_msg_data(pointer).copyMemory(from: source, byteCount: bytes.count)
        }
    }

    /// A frame of `count` bytes in memory of its own, mapped from the kernel
    /// (zero-filled, and costing nothing until touched), whose first bytes
    /// `body` writes; libzmq unmaps it when the frame is done
    /// (`zmq_msg_init_data`). How the fuzzer makes a frame over the size
    /// limit without writing 64 MiB a time (`IncomingFrames.hold`).
    ///
    /// Thread rules: any thread; the message then stays on the thread that uses it.
    /// - Precondition: the mapping succeeds (as memory for ``init(bytes:)``).
    package init(mappedCount count: Int, initializingWith body: (UnsafeMutableRawBufferPointer) -> Void) {
        pointer = .allocate(capacity: 1)
        let memory = mmap(nil, count, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        guard let memory, memory != MAP_FAILED else {
            pointer.deallocate()
            fatalError("ZeroMQ: mmap(\(count)) failed: errno \(errno)")
        }
        body(UnsafeMutableRawBufferPointer(start: memory, count: count))
        // The size rides in the hint, for munmap.
        let unmap: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { data, hint in
            munmap(data, Int(bitPattern: hint))
        }
        guard zmq_msg_init_data(pointer, memory, count, unmap, UnsafeMutableRawPointer(bitPattern: count)) == 0 else {
            let error = ZMQError.last("zmq_msg_init_data(\(count))")
            munmap(memory, count)
            pointer.deallocate()
            fatalError("ZeroMQ: \(error)")
        }
    }

    deinit {
        // Releases the frame's content (a reference on large frames shared with libzmq).
        zmq_msg_close(pointer)
        pointer.deallocate()
    }

    /// The frame's size in bytes (`zmq_msg_size`).
    ///
    /// Thread rules: the message's thread. Never fails.
    public var count: Int {
        zmq_msg_size(pointer)
    }

    /// Whether more frames of the same multipart message follow this one
    /// (`zmq_msg_more`); meaningful after a receive.
    ///
    /// Thread rules: the message's thread. Never fails.
    public var hasMore: Bool {
        zmq_msg_more(pointer) != 0
    }

    /// Calls `body` with the frame's bytes, without copying.
    ///
    /// Thread rules: the message's thread, and no receive into it while `body` runs.
    /// - Parameter body: must not keep the buffer: it is valid only until the next
    ///   receive into this message or its deinit.
    /// - Returns: what `body` returns.
    /// - Throws: what `body` throws.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: zmq_msg_data(pointer), count: zmq_msg_size(pointer)))
    }

    /// The frame's bytes, without copying and without a closure: what a hot receive path
    /// reads once per frame. ``withUnsafeBytes(_:)`` is generic and not inlinable across
    /// modules, so each call pays for its generic entry.
    ///
    /// Thread rules: the message's thread.
    /// - Important: the buffer is valid only until the next receive into this message, its
    ///   ``reset()`` or its deinit; do not keep it past that.
    public var unsafeBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: zmq_msg_data(pointer), count: zmq_msg_size(pointer))
    }

    /// A copy of the frame's bytes. Allocates; on hot paths prefer ``withUnsafeBytes(_:)``.
    ///
    /// Thread rules: the message's thread; the `Data` is an independent value for any
    /// thread. Never fails.
    public var data: Data {
        withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return Data() }
            return Data(bytes: base, count: bytes.count)
        }
    }

    /// Moves this frame's content into `other` (`zmq_msg_move`): `other`'s old content is
    /// released, and this message is left empty. Nothing is copied, small frames' inline
    /// bytes aside: read `other`'s bytes afresh afterwards.
    ///
    /// Thread rules: the messages' thread. Never fails.
    public func moveContent(to other: Message) {
        zmq_msg_move(other.pointer, pointer)
    }

    /// Drops the content and starts over as an empty frame, so that a message kept for
    /// reuse does not pin a large frame's buffer.
    ///
    /// Thread rules: the message's thread. Never fails.
    public func reset() {
        zmq_msg_close(pointer)
        zmq_msg_init(pointer)
    }
}

/// `Message` wraps mutable state that libzmq reads and writes without locks.
@available(*, unavailable, message: "a ZeroMQ Message belongs to one thread")
extension Message: Sendable {}
