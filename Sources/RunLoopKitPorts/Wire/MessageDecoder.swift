import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Frames → PortMessage (docs/wire-format.md): checks a received message
/// against the format, version 1 (multipart) or 2, 3 or 5 (packed), and builds the
/// PortMessage its handler gets, resolving each port descriptor to a Port.
/// Anything malformed, truncated, oversized or of an unknown version is a
/// `DecodeError`, never a crash (S-PORT-7). Reachability is not its
/// business: a descriptor becomes a send right here, and whether it can be
/// reached is decided on its first send (S-PORT-8).
///
/// Threading: one per port receiver, used under the receiver's lock.
struct MessageDecoder {
    /// Descriptors decoded recently, and the ports they named: the same
    /// reply port comes back message after message, so it is decoded once,
    /// not once per message (and its send channel stays open meanwhile).
    private var cache: DescriptorCache
    /// The components array a port's batch writes its messages into, kept
    /// here between batches (`lend`, `takeBack`): a message whose handler
    /// let it go leaves its array and the bytes of its data components to
    /// the next one, which is refilled in place instead of allocated again.
    /// A handler that keeps a message, or one of its `Data`, keeps it
    /// intact: the array and `Data` copy on write, so the next message then
    /// allocates its own. Only the array of a message within
    /// `WireFormat.packLimit` is kept, so what it pins between messages and
    /// batches stays under that limit.
    private var scratch: [PortMessage.Component] = []
    /// The last message decoded was over `WireFormat.packLimit` (multipart,
    /// or a peer's large packed frame): its array is not kept.
    private var lastWasLarge = false

    /// `registry`: where descriptors resolve; the process's, but in the
    /// fuzzer (`WireFuzzing`), which gives each input a registry of its own.
    init(registry: PortRegistry = .shared) {
        cache = DescriptorCache(registry: registry)
    }

    /// How many version-4 descriptors this decoder resolved (the fuzzer
    /// counts them).
    var relativeDescriptorsResolved: Int { cache.relativeResolved }

    /// Lends the kept components array to `message`, a batch's fresh inbox
    /// (one that holds no array yet); a nested batch finds none to take.
    mutating func lend(to message: inout PortMessage) {
        guard message.components.capacity == 0, scratch.capacity > 0 else { return }
        swap(&message.components, &scratch)
    }

    /// Takes the inbox's components array back at the end of a batch (if
    /// none is kept already), so that the next batch starts with it.
    mutating func takeBack(from message: inout PortMessage) {
        guard scratch.capacity == 0, !lastWasLarge else { return }
        swap(&message.components, &scratch)
    }

    /// Decodes the message held in `frames` into `message`, a received
    /// message whose `receivePort` is set: its msgid, components (written
    /// over the last message's, in place where nothing else holds them) and
    /// reply port (its `sendPort`). Returns its trace id. On failure,
    /// `message` is left half-written: it is never delivered.
    mutating func decode(_ frames: IncomingFrames, into message: inout PortMessage) throws(WireFormat.DecodeError) -> UInt64? {
        guard _fastPath(frames.totalBytes <= WireFormat.maxMessageBytes) else { throw .messageTooLarge(frames.totalBytes) }
        let header = try frames.readHeader()
        if header.isPacked {
            // A packed message is one frame; frames after it make it malformed.
            guard _fastPath(frames.frameCount == 1) else { throw .frameCountMismatch(expected: 1, got: frames.frameCount) }
            try decodePacked(frames.firstBytes, header, of: frames, into: &message)
        } else {
            try decodeMultipart(frames, header, into: &message)
        }
        // A nil check on the usual message: only version 3 carries a context.
        if _slowPath(header.hasTraceContext) {
            message.traceBox = WireFormat.traceContext(ofHeader: frames.firstBytes).map(TraceContextBox.init)
        } else if _slowPath(message.traceBox != nil) {
            message.traceBox = nil
        }
        return header.traceID
    }

    /// Version 2: every component and the reply port in the header's frame.
    private mutating func decodePacked(
        _ bytes: UnsafeRawBufferPointer, _ header: WireFormat.Header, of frames: IncomingFrames, into message: inout PortMessage
    ) throws(WireFormat.DecodeError) {
        guard _fastPath(bytes.count <= WireFormat.maxFrameBytes) else { throw .frameTooLarge(bytes.count) }
        if _slowPath(lastWasLarge) {
            // Let a large message's components go now, not when the next is delivered.
            message.components = []
        }
        lastWasLarge = bytes.count > WireFormat.packLimit
        if header.isOneDataComponent {
            let record = try WireFormat.onlyRecord(of: bytes, header: header)
            if message.components.count == 1 {
                Self.refill(&message.components[0], with: record)
            } else {
                message.components.removeAll(keepingCapacity: true)
                message.components.append(.data(Self.newData(record)))
            }
            message.msgid = header.msgid
            if message.sendPort != nil { message.sendPort = nil }
            return
        }
        // Component `index` is written over the last message's component at
        // that index (a data component refilled in place), or appended.
        var records = WireFormat.PackedRecords(bytes, header: header)
        var replyPort: Port?
        var sameReplyPort = false
        for index in 0..<header.recordCount {
            let record = try records.next()
            if index == header.componentCount {
                sameReplyPort = cache.isLatest(record, of: frames, naming: message.sendPort)
                if _slowPath(!sameReplyPort) { replyPort = try cache.port(for: record, of: frames) }
            } else if _fastPath(header.kind(at: index, in: bytes) == WireFormat.kindData) {
                if index < message.components.count {
                    Self.refill(&message.components[index], with: record)
                } else {
                    message.components.append(.data(Self.newData(record)))
                }
            } else {
                let port = PortMessage.Component.port(try cache.port(for: record, of: frames))
                if index < message.components.count { message.components[index] = port } else { message.components.append(port) }
            }
        }
        try records.finish()
        if _slowPath(message.components.count > header.componentCount) {
            message.components.removeLast(message.components.count - header.componentCount)
        }
        message.msgid = header.msgid
        // Most messages of a stream carry the same reply port, or none:
        // then nothing is retained or released here.
        if !sameReplyPort && message.sendPort !== replyPort { message.sendPort = replyPort }
    }

    /// Checks the message held in `message`'s frames as `decode` does, and
    /// fills in its header, its ports (resolved) and component 0's bytes,
    /// without copying anything out: the message is read where it lies
    /// (`PortMessageView`). `replyPort` is the batch's: the reply port of
    /// the last message, replaced only when this one names another.
    mutating func decodeInPlace(_ message: InPlaceMessage, replyPort: inout Port?) throws(WireFormat.DecodeError) {
        let frames = message.frames
        guard frames.totalBytes <= WireFormat.maxMessageBytes else { throw .messageTooLarge(frames.totalBytes) }
        // Read again even after a tcp reader's check: taking the kept header
        // here cost the usual in-place message 37 instructions (callgrind).
        let header = try WireFormat.readHeader(frames.firstBytes)
        var reply: Port?
        var sameReplyPort = false
        if header.isPacked {
            let bytes = frames.firstBytes
            guard frames.frameCount == 1 else { throw .frameCountMismatch(expected: 1, got: frames.frameCount) }
            guard bytes.count <= WireFormat.maxFrameBytes else { throw .frameTooLarge(bytes.count) }
            if header.isOneDataComponent {
                message.firstData = try WireFormat.onlyRecord(of: bytes, header: header)
            } else {
                var records = WireFormat.PackedRecords(bytes, header: header)
                for index in 0..<header.recordCount {
                    let record = try records.next()
                    if index == header.componentCount {
                        sameReplyPort = cache.isLatest(record, of: frames, naming: replyPort)
                        if !sameReplyPort { reply = try cache.port(for: record, of: frames) }
                    } else if header.kind(at: index, in: bytes) == WireFormat.kindPort {
                        message.ports.append(try cache.port(for: record, of: frames))
                    } else if index == 0 {
                        message.firstData = record
                    }
                }
                try records.finish()
            }
        } else {
            guard frames.frameCount == header.frameCount, frames.keptCount == frames.frameCount else {
                throw .frameCountMismatch(expected: header.frameCount, got: frames.frameCount)
            }
            for index in 1..<max(frames.keptCount, 1) {
                let bytes = frames[index].unsafeBytes
                guard bytes.count <= WireFormat.maxFrameBytes else { throw .frameTooLarge(bytes.count) }
                let component = index - 1
                if component == header.componentCount {
                    reply = try cache.port(for: bytes, of: frames)
                } else if header.kind(at: component, in: frames.firstBytes) == WireFormat.kindPort {
                    message.ports.append(try cache.port(for: bytes, of: frames))
                } else if component == 0 {
                    message.firstData = bytes
                }
            }
        }
        message.header = header
        if !sameReplyPort && replyPort !== reply { replyPort = reply }
    }

    /// A data component's bytes in a new `Data`.
    private static func newData(_ bytes: UnsafeRawBufferPointer) -> Data {
        bytes.isEmpty ? Data() : Data(bytes: bytes.baseAddress!, count: bytes.count)
    }

    /// Makes `component` a data component holding `bytes`, in the same
    /// buffer when it already is a data component of that size that nothing
    /// else holds: the bytes are copied over the old ones, and neither the
    /// `Data` nor its bytes are allocated again. Otherwise a new `Data`.
    private static func refill(_ component: inout PortMessage.Component, with bytes: UnsafeRawBufferPointer) {
        // The component is moved out (consumed, not copied), so that `data`
        // holds the only reference if the last handler kept nothing: the
        // write below then happens in place, with no retain or release. If
        // anything else still holds these bytes (a handler kept the message
        // or its Data), Data copies on write and what it holds stays as it was.
        switch consume component {
        case var .data(data) where data.count == bytes.count && !bytes.isEmpty:
            data.withUnsafeMutableBytes { $0.copyMemory(from: bytes) }
            component = .data(consume data)
        default:
            component = .data(newData(bytes))
        }
    }

    /// Version 1: a frame per component, then the reply port's descriptor.
    private mutating func decodeMultipart(
        _ frames: IncomingFrames, _ header: WireFormat.Header, into message: inout PortMessage
    ) throws(WireFormat.DecodeError) {
        guard frames.frameCount == header.frameCount, frames.keptCount == frames.frameCount else {
            throw .frameCountMismatch(expected: header.frameCount, got: frames.frameCount)
        }
        var components: [PortMessage.Component] = []
        components.reserveCapacity(header.componentCount)
        var replyPort: Port?
        for index in 1..<max(frames.keptCount, 1) {
            let frame = frames[index]
            let bytes = frame.unsafeBytes
            guard bytes.count <= WireFormat.maxFrameBytes else { throw .frameTooLarge(bytes.count) }
            let component = index - 1
            if component == header.componentCount {
                replyPort = try cache.port(for: bytes, of: frames)
            } else if header.kind(at: component, in: frames.firstBytes) == WireFormat.kindData {
                components.append(.data(frame.data))
            } else {
                components.append(.port(try cache.port(for: bytes, of: frames)))
            }
        }
        // A large message's own array: not written over the kept one, and
        // not kept after it (see `scratch`).
        message.components = components
        lastWasLarge = true
        message.msgid = header.msgid
        if message.sendPort !== replyPort { message.sendPort = replyPort }
    }
}
