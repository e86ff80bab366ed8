import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The raw frames of one received message, before anything is decoded:
/// a port's receiver fills it from its socket, `MessageDecoder` reads it.
///
/// Reused from message to message, so that a stream of one-frame (packed)
/// messages allocates nothing here. Memory stays bounded whatever a peer
/// sends: frames past `maxKept`, or past `WireFormat.maxMessageBytes` in
/// all, are received into a scratch frame and counted, never kept, so that
/// a bad message is still read to its end (S-PORT-7).
///
/// Threading: the receiver's, under its lock.
final class IncomingFrames {
    /// A good message has at most a header, its components and a reply port.
    static let maxKept = WireFormat.maxComponents + 2

    // @exclusivity(unchecked) on the properties below: they are touched on
    // the message path, under the receiver's lock alone, so no two accesses
    // can overlap, and the runtime's dynamic exclusivity check cost about a
    // thousand instructions a message (docs/performance.md).
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
        firstBytes = first.unsafeBytes
        keptCount = 1
        frameCount = 1
        totalBytes = firstBytes.count
        // A packed message, the usual case, is one frame: nothing more to read.
        guard first.hasMore else { return true }
        var more = true
        while more {
            let keep = keptCount < Self.maxKept && totalBytes <= WireFormat.maxMessageBytes
            if keep && keptCount - 1 == rest.count { rest.append(Message()) }
            let frame = keep ? rest[keptCount - 1] : scratch
            guard try socket.receive(into: frame, dontWait: true) else { break }
            if keep { keptCount += 1 }
            frameCount += 1
            totalBytes += frame.count
            more = frame.hasMore
        }
        return true
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
        holder.keptCount = keptCount
        holder.frameCount = frameCount
        holder.totalBytes = totalBytes
        if frameCount > keptCount { scratch.reset() }
        firstBytes = UnsafeRawBufferPointer(start: nil, count: 0)
        keptCount = 0
        frameCount = 0
        totalBytes = 0
    }

    /// Forgets the message held; frames beyond the first give their buffers
    /// back, so that a large message is not pinned until the next one.
    func clear() {
        if frameCount > 1 || firstBytes.count > WireFormat.packLimit { clearLarge() }
        firstBytes = UnsafeRawBufferPointer(start: nil, count: 0)
        keptCount = 0
        frameCount = 0
        totalBytes = 0
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
