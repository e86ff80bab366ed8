import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The raw frames of one received message, before anything is decoded:
/// a port's receiver fills it from its socket, or a tcp socket's reader
/// from its own and hands it to the port (`PortReceiver.hand`);
/// `MessageDecoder` reads it.
///
/// Reused from message to message, so that a stream of one-frame (packed)
/// messages allocates nothing here. Memory stays bounded whatever a peer
/// sends: frames past `maxKept`, or past `WireFormat.maxMessageBytes` in
/// all, are received into a scratch frame and counted, never kept, so that
/// a bad message is still read to its end (S-PORT-7).
///
/// Threading: the receiver's, under its lock (a tcp reader's, under its
/// reader lock, until it hands the message over).
final class IncomingFrames {
    /// A good message has at most a header, its components and a reply port.
    static let maxKept = WireFormat.maxComponents + 2

    // @exclusivity(unchecked) on the properties below: they are touched on
    // the message path, under the receiver's lock alone, so no two accesses
    // can overlap, and the runtime's dynamic exclusivity check would run at
    // every access (docs/performance.md, "The port path").
    /// The first frame, held apart from the rest: a packed message is this
    /// frame alone, read without touching an array (no reference counting).
    private let first = Message()
    /// The frames after the first, kept; grown on demand, then reused.
    // U-INCOMING-FRAMES (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var rest: [Message] = []
    private let scratch = Message()
    /// Frames kept, from the first.
    @exclusivity(unchecked) private(set) var keptCount = 0
    /// Every frame of the message, kept or not.
    @exclusivity(unchecked) private(set) var frameCount = 0
    /// The bytes of every frame, kept or not.
    @exclusivity(unchecked) private(set) var totalBytes = 0
    /// The first frame's bytes, read once when it arrives; valid until the
    /// next `receive` or `clear`.
    @exclusivity(unchecked) private(set) var firstBytes = UnsafeRawBufferPointer(start: nil, count: 0)

    /// The first frame's header, when a tcp socket's reader read it to
    /// route the message (`hasCheckedHeader`): the decoder reads it no
    /// more. A flag beside a plain value, so that the usual message tests
    /// one byte, not an optional header.
    // U-INCOMING-FRAMES (docs/unsafe-sites.md).
    @exclusivity(unchecked) private(set) var checkedHeader = WireFormat.Header.none
    @exclusivity(unchecked) private(set) var hasCheckedHeader = false

    /// The home of the process at the other end of the tcp connection the
    /// message came over, when it sent one (version-4 descriptors are read
    /// against it); nil for a message from anywhere else. Set by the tcp
    /// reader for a message that carries ports, and cleared by a receiver
    /// before it reads its own socket into a holder a tcp message was
    /// moved into. `senderTag` is its address (0 for none), which the
    /// decoder's cache compares without a retain and a release.
    // U-INCOMING-FRAMES (docs/unsafe-sites.md).
    @exclusivity(unchecked) private(set) var sender: TCPHome?
    @exclusivity(unchecked) private(set) var senderTag: UInt = 0

    /// Sets `sender` (and its tag) if it changed.
    @inline(__always)
    func setSender(_ home: TCPHome?, tag: UInt) {
        guard tag != senderTag else { return }
        sender = home
        senderTag = tag
    }

    /// The reader that routed the message read its header.
    func keep(checkedHeader header: WireFormat.Header) {
        checkedHeader = header
        hasCheckedHeader = true
    }

    /// The first frame's header (`WireFormat.readHeader`), read once.
    @inline(__always)
    func readHeader() throws(WireFormat.DecodeError) -> WireFormat.Header {
        if hasCheckedHeader { return checkedHeader }
        return try WireFormat.readHeader(firstBytes)
    }

    /// Whether frames of a message are held (received, not yet decoded).
    var isHolding: Bool { frameCount > 0 }

    /// Frame `index` (below `keptCount`).
    subscript(index: Int) -> Message { index == 0 ? first : rest[index - 1] }

    /// Receives the next whole message without waiting; false when none is
    /// queued. libzmq hands out a multipart message whole, so once its first
    /// frame is here, the rest is too.
    func receive(from socket: Socket) throws(ZMQError) -> Bool {
        clear()
        guard try socket.receive(into: first, dontWait: true) else { return false }
        firstArrived()
        // A packed message, the usual case, is one frame: nothing more to read.
        guard first.hasMore else { return true }
        var more = true
        while more {
            let (frame, keep) = nextSlot()
            guard try socket.receive(into: frame, dontWait: true) else { break }
            arrived(frame, kept: keep)
            more = frame.hasMore
        }
        return true
    }

    /// Holds the message whose frames `frames` gives, as `receive` would
    /// hold it had they arrived from a socket: the same frames kept, the
    /// same counted only. How the fuzzer and its corpus test feed the
    /// decoders (`WireFuzzing`). A frame is its leading bytes and its
    /// length: a frame longer than its bytes (one over the size limit) is
    /// zero-filled past them, in memory that costs nothing until read; a
    /// frame that would not be kept is counted without being made.
    package func hold(_ frames: [FuzzInput.Frame]) {
        clear()
        guard let head = frames.first else { return }
        Self.fill(first, with: head)
        firstArrived()
        for frame in frames.dropFirst() {
            let (slot, keep) = nextSlot()
            if keep {
                Self.fill(slot, with: frame)
                arrived(slot, kept: true)
            } else {
                frameCount += 1
                totalBytes += frame.length
            }
        }
    }

    private static func fill(_ message: Message, with frame: FuzzInput.Frame) {
        guard frame.length > frame.bytes.count else { return Message(bytes: frame.bytes).moveContent(to: message) }
        Message(mappedCount: frame.length) { buffer in
            if !frame.bytes.isEmpty { buffer.copyMemory(from: frame.bytes) }
        }.moveContent(to: message)
    }

    /// The first frame is in `first`.
    private func firstArrived() {
        firstBytes = first.unsafeBytes
        hasCheckedHeader = false
        keptCount = 1
        frameCount = 1
        totalBytes = firstBytes.count
    }

    /// Where the next frame after the first goes: a kept frame, or the
    /// scratch frame once `maxKept` frames or `maxMessageBytes` are held.
    private func nextSlot() -> (frame: Message, keep: Bool) {
        let keep = keptCount < Self.maxKept && totalBytes <= WireFormat.maxMessageBytes
        if keep && keptCount - 1 == rest.count { rest.append(Message()) }
        return (keep ? rest[keptCount - 1] : scratch, keep)
    }

    /// A frame after the first has arrived in `frame` (`nextSlot`'s).
    private func arrived(_ frame: Message, kept: Bool) {
        if kept { keptCount += 1 }
        frameCount += 1
        totalBytes += frame.count
    }

    /// Moves the message held into `holder` (its old message released),
    /// leaving these frames empty: nothing is copied. What a message read in
    /// place is kept in while its handler runs (`PortReceiver.receiveInPlace`).
    func move(to holder: IncomingFrames) {
        holder.clear()
        first.moveContent(to: holder.first)
        for index in 0..<max(keptCount - 1, 0) {
            if index == holder.rest.count { holder.rest.append(Message()) }
            rest[index].moveContent(to: holder.rest[index])
        }
        // A small frame's bytes live in the zmq_msg_t itself: read them where they went.
        holder.firstBytes = holder.first.unsafeBytes
        holder.checkedHeader = checkedHeader
        holder.hasCheckedHeader = hasCheckedHeader
        holder.setSender(sender, tag: senderTag)
        holder.keptCount = keptCount
        holder.frameCount = frameCount
        holder.totalBytes = totalBytes
        if frameCount > keptCount { scratch.reset() }
        firstBytes = UnsafeRawBufferPointer(start: nil, count: 0)
        hasCheckedHeader = false
        keptCount = 0
        frameCount = 0
        totalBytes = 0
    }

    /// Forgets the message held; frames beyond the first give their buffers
    /// back, so that a large message is not pinned until the next one.
    func clear() {
        if frameCount > 1 || firstBytes.count > WireFormat.packLimit { clearLarge() }
        firstBytes = UnsafeRawBufferPointer(start: nil, count: 0)
        hasCheckedHeader = false
        keptCount = 0
        frameCount = 0
        totalBytes = 0
    }

    /// `clear`, and the first frame's content given back too, once its
    /// message was decoded: a frame read from a connection (tcp, ipc)
    /// points into the buffer libzmq's I/O thread reads the connection
    /// into, and while any frame holds that buffer the I/O thread reads
    /// the next bytes into a new one (a large allocation, freed later by
    /// this thread). Held until the next message, as `clear` leaves it,
    /// it cost the I/O thread that allocation at every message of a round
    /// trip (docs/performance.md, "Over tcp").
    func clearAndRelease() {
        clear()
        first.reset()
    }

    /// What `clear` does for a multipart message or a large first frame:
    /// gives their buffers back. Apart, so that a one-frame message's clear
    /// stays a few stores.
    private func clearLarge() {
        if keptCount > 0 && firstBytes.count > WireFormat.packLimit { first.reset() }
        if keptCount > 1 { for index in 0..<(keptCount - 1) { rest[index].reset() } }
        if frameCount > keptCount { scratch.reset() }
    }
}
