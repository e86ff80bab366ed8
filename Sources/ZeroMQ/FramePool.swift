internal import CZeroMQ
internal import Synchronization

/// Buffers for the frames one sender sends, used again and again instead
/// of allocated for each frame: for ``Socket/send(byteCount:from:more:dontWait:write:)``.
///
/// libzmq allocates a frame's buffer on the sending thread and frees it on
/// the thread that closes the frame: between threads (inproc), the
/// receiver's. Above glibc's fastbin limit (a 128-byte chunk: libzmq's
/// 40-byte content header plus 80 bytes of frame) that free and the next
/// frame's allocation both take the allocator's lock, and a stream across
/// two CPUs spends its time waiting for it: raw libzmq's own throughput
/// halves from 80-byte frames to 81-byte ones. A pool's buffer goes back to
/// its pool when libzmq lets it go (a push onto a lock-free stack, from
/// whichever thread), and the sender takes it up again; only libzmq's
/// 40-byte content header is still allocated per frame, within the fastbin
/// limit.
///
/// Frames over ``bufferBytes``, and frames sent while all ``maxBuffers``
/// buffers are in flight, are allocated by libzmq as usual; frames of up to
/// 33 bytes, which libzmq keeps inside the `zmq_msg_t` without allocating,
/// are sent as without a pool too, unless the pool is made to count every
/// frame (`smallestFrameBytes`). The pool keeps
/// what it has made, up to `maxBuffers × (bufferBytes + 16)` bytes, until it
/// is closed; buffers still in flight then are freed as libzmq lets them go.
///
/// Thread rules: taking buffers (sending with the pool) and ``close()`` are
/// the owner's, one thread at a time, like the socket it sends with; libzmq
/// gives buffers back from any thread.
public final class FramePool: @unchecked Sendable {
    // @unchecked Sendable: `ready` and `isClosed` are the owner's alone (see
    // the thread rules); what other threads touch is in `returns`, atomics.

    /// The largest frame a pool buffer holds.
    public let bufferBytes: Int
    /// The smallest frame sent from a pool buffer; smaller ones are sent
    /// as without a pool.
    public let smallestFrameBytes: Int
    /// The most buffers the pool makes.
    public let maxBuffers: Int
    /// The owner's buffers, ready to send: a list linked through each
    /// buffer's first word.
    private var ready: UnsafeMutableRawPointer?
    private var isClosed = false
    // The owner's: see `lastFrameWasPooled`. Private storage, so that the
    // compiler sees every access in this file and checks none at run time
    // (a `public private(set)` stored property is checked on every frame).
    private var lastTakeWasPooled = true

    /// Whether the last frame offered to the pool was sent from one of its
    /// buffers (so that ``outstandingBuffers()`` at 0 means every frame has
    /// left libzmq), or by libzmq's own allocation.
    ///
    /// Thread rules: the owner's.
    public var lastFrameWasPooled: Bool { lastTakeWasPooled }
    private let returns: Returns

    /// What the free function reaches, from any thread: kept alive past
    /// `close()` while buffers are in flight (see `close`).
    final class Returns: Sendable {
        /// The buffers given back: the address of the top one (linked
        /// through each buffer's first word), 0 when there is none,
        /// `FramePool.closedMark` once the pool is closed.
        let top = Atomic<UInt>(0)
        /// Buffers made and not yet freed.
        let live = Atomic<Int>(0)
    }

    /// A buffer's own header before its frame bytes: the next buffer in a
    /// list, and the `Returns` it goes back to. 16 bytes keep the frame aligned.
    static let headerBytes = 16
    /// `Returns.top` once closed: never an address (buffers are aligned).
    static let closedMark: UInt = 1

    /// A pool of up to `maxBuffers` buffers of `bufferBytes` each, for
    /// frames of `smallestFrameBytes` to `bufferBytes` bytes. The default
    /// smallest frame leaves to libzmq the frames it keeps inline without
    /// allocating; a smaller one makes every frame a pool's, so that
    /// ``outstandingBuffers()`` counts every frame not yet written.
    ///
    /// Thread rules: any thread; then the owner's (see the type).
    public init(bufferBytes: Int = 240, maxBuffers: Int = 2048, smallestFrameBytes: Int = FramePool.inlineFrameBytes + 1) {
        precondition(bufferBytes > 0 && maxBuffers > 0, "FramePool: bufferBytes and maxBuffers must be positive")
        precondition(smallestFrameBytes >= 1, "FramePool: smallestFrameBytes must be at least 1")
        self.bufferBytes = bufferBytes
        self.smallestFrameBytes = smallestFrameBytes
        self.maxBuffers = maxBuffers
        returns = Returns()
    }

    deinit {
        close()
    }

    /// Buffers made and not yet freed: in flight, or ready.
    ///
    /// Thread rules: any thread (a moment's reading).
    public var bufferCount: Int { returns.live.load(ordering: .relaxed) }

    /// Buffers libzmq holds now: frames sent from the pool that it has not
    /// yet written out (or dropped). libzmq writes a socket's frames in
    /// order, so 0 means that every frame sent from the pool before this
    /// call has left libzmq.
    ///
    /// Thread rules: the owner's.
    public func outstandingBuffers() -> Int {
        if !isClosed {
            let given = returns.top.exchange(0, ordering: .acquiring)
            if var tail = UnsafeMutableRawPointer(bitPattern: given) {
                // Put what was given back in front of the ready list.
                while let next = tail.load(as: UnsafeMutableRawPointer?.self) { tail = next }
                tail.storeBytes(of: ready, as: UnsafeMutableRawPointer?.self)
                ready = UnsafeMutableRawPointer(bitPattern: given)
            }
        }
        var readyCount = 0
        var next = ready
        while let buffer = next {
            readyCount += 1
            next = buffer.load(as: UnsafeMutableRawPointer?.self)
        }
        return returns.live.load(ordering: .acquiring) - readyCount
    }

    /// Frees the buffers ready now; those in flight are freed as libzmq
    /// lets them go. Later sends with the pool allocate as usual.
    /// Idempotent; `deinit` calls it.
    ///
    /// Thread rules: the owner's.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        // Kept alive for the buffers in flight: released by whoever frees
        // the last buffer, here or in `framePoolGiveBack`.
        // U-FRAME-POOL (docs/unsafe-sites.md).
        let keptAlive = Unmanaged.passRetained(returns)
        var freed = Self.freeList(ready)
        ready = nil
        let given = returns.top.exchange(Self.closedMark, ordering: .acquiringAndReleasing)
        freed += Self.freeList(UnsafeMutableRawPointer(bitPattern: given))
        if returns.live.wrappingSubtract(freed, ordering: .acquiringAndReleasing).newValue == 0 { keptAlive.release() }
    }

    /// The largest frame libzmq keeps inside the `zmq_msg_t` itself (on
    /// 64-bit), allocating nothing: such frames gain nothing from a buffer.
    public static let inlineFrameBytes = 33

    /// A buffer for a frame of `byteCount` bytes, or nil (small enough for
    /// libzmq to keep inline, too large, all in flight, or closed): its
    /// frame bytes start `headerBytes` in.
    @inline(__always)
    func take(byteCount: Int) -> UnsafeMutableRawPointer? {
        guard byteCount >= smallestFrameBytes && byteCount <= bufferBytes else {
            lastTakeWasPooled = false
            return nil
        }
        if ready == nil, !isClosed, returns.top.load(ordering: .relaxed) != 0 {
            // All that was given back since the last look, at once.
            ready = UnsafeMutableRawPointer(bitPattern: returns.top.exchange(0, ordering: .acquiring))
        }
        if let buffer = ready {
            ready = buffer.load(as: UnsafeMutableRawPointer?.self)
            lastTakeWasPooled = true
            return buffer
        }
        let made = makeBuffer()
        lastTakeWasPooled = made != nil
        return made
    }

    private func makeBuffer() -> UnsafeMutableRawPointer? {
        guard !isClosed, returns.live.load(ordering: .relaxed) < maxBuffers else { return nil }
        returns.live.wrappingAdd(1, ordering: .relaxed)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: Self.headerBytes + bufferBytes, alignment: 16)
        buffer.storeBytes(of: nil, as: UnsafeMutableRawPointer?.self)
        // U-FRAME-POOL (docs/unsafe-sites.md).
        buffer.storeBytes(of: Unmanaged.passUnretained(returns).toOpaque(), toByteOffset: 8, as: UnsafeMutableRawPointer.self)
        return buffer
    }

    /// Frees a list of buffers; returns how many.
    private static func freeList(_ first: UnsafeMutableRawPointer?) -> Int {
        var count = 0
        var next = first
        while let buffer = next {
            next = buffer.load(as: UnsafeMutableRawPointer?.self)
            buffer.deallocate()
            count += 1
        }
        return count
    }

    /// Gives a buffer back (see `framePoolGiveBack`). Returns true when
    /// the pool was closed and this was its last buffer: the caller then
    /// lets `returns` go.
    fileprivate static func giveBack(_ buffer: UnsafeMutableRawPointer, to returns: Returns) -> Bool {
        var top = returns.top.load(ordering: .relaxed)
        while top != closedMark {
            buffer.storeBytes(of: UnsafeMutableRawPointer(bitPattern: top), as: UnsafeMutableRawPointer?.self)
            let (pushed, current) = returns.top.compareExchange(
                expected: top, desired: UInt(bitPattern: buffer), successOrdering: .releasing, failureOrdering: .relaxed)
            if pushed { return false }
            top = current
        }
        // Closed: the buffer is freed, and the last one out lets `returns` go.
        buffer.deallocate()
        return returns.live.wrappingSubtract(1, ordering: .acquiringAndReleasing).newValue == 0
    }
}

/// libzmq's free function for a frame sent from a `FramePool` buffer (the
/// buffer's address is the hint): gives the buffer back to its pool, from
/// whichever thread closes the frame. A global function, so that it passes
/// to C as a plain function pointer.
func framePoolGiveBack(_ data: UnsafeMutableRawPointer?, _ hint: UnsafeMutableRawPointer?) {
    guard let buffer = hint else { return }
    // U-FRAME-POOL (docs/unsafe-sites.md).
    let returns = Unmanaged<FramePool.Returns>.fromOpaque(buffer.load(fromByteOffset: 8, as: UnsafeRawPointer.self))
    let wasLast = returns._withUnsafeGuaranteedRef { FramePool.giveBack(buffer, to: $0) }
    if wasLast { returns.release() }
}
