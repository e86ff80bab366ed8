import ZeroMQ

/// Frames → PortMessage (docs/wire-format.md): checks a received message
/// against the format, version 1 (multipart) or 2 (packed), and builds the
/// PortMessage its handler gets, resolving each port descriptor to a Port.
/// Anything malformed, truncated, oversized or of an unknown version is a
/// `DecodeError`, never a crash (S-PORT-7). Reachability is not its
/// business: a descriptor becomes a send right here, and whether it can be
/// reached is decided on its first send (S-PORT-8).
///
/// Threading: one per port receiver, used under the receiver's lock.
struct MessageDecoder {
    /// A decoded message and, when the sender's tap was on, its trace id.
    struct Decoded {
        var message: PortMessage
        let traceID: UInt64?
    }

    /// Descriptors decoded recently, and the ports they named: the same
    /// reply port comes back message after message, so it is decoded once,
    /// not once per message (and its send channel stays open meanwhile).
    private var cache = DescriptorCache()
    /// The components of the message decoded last, shared with it: once its
    /// handler has let it go, the next message reuses the array and the
    /// bytes of its data components instead of allocating them again. A
    /// handler that keeps the message, or one of its `Data`, keeps it
    /// intact: the array and `Data` copy on write, so the next message then
    /// allocates its own. Used for packed messages only, so what it pins
    /// between messages stays under `WireFormat.packLimit`.
    private var scratch: [PortMessage.Component] = []

    mutating func decode(_ frames: IncomingFrames) -> Result<Decoded, WireFormat.DecodeError> {
        guard frames.totalBytes <= WireFormat.maxMessageBytes else { return .failure(.messageTooLarge(frames.totalBytes)) }
        let header: WireFormat.Header
        do {
            header = try WireFormat.readHeader(frames.firstBytes)
        } catch {
            return .failure(error)
        }
        if header.isPacked {
            // A packed message is one frame; frames after it make it malformed.
            guard frames.frameCount == 1 else { return .failure(.frameCountMismatch(expected: 1, got: frames.frameCount)) }
            return decodePacked(frames.firstBytes, header)
        }
        return decodeMultipart(frames, header)
    }

    /// Version 2: every component and the reply port in the header's frame.
    private mutating func decodePacked(_ bytes: UnsafeRawBufferPointer, _ header: WireFormat.Header) -> Result<Decoded, WireFormat.DecodeError> {
        let size = bytes.count
        guard size <= WireFormat.maxFrameBytes else { return .failure(.frameTooLarge(size)) }
        let reuse = size <= WireFormat.packLimit
        var components = reuse ? scratch : []
        scratch = []  // the buffer is `components`' alone while it fills
        // Component `index` is written over the last message's component at
        // that index (a data component refilled in place), or appended.
        var replyPort: Port?
        var records = WireFormat.PackedRecords(bytes, header: header)
        do throws(WireFormat.DecodeError) {
            while let (index, record) = try records.next() {
                if index == header.componentCount {
                    replyPort = try cache.port(for: record)
                } else if header.kind(at: index) == WireFormat.kindData {
                    if index < components.count {
                        Self.refill(&components[index], with: record)
                    } else {
                        components.append(.data(Self.newData(record)))
                    }
                } else {
                    let port = PortMessage.Component.port(try cache.port(for: record))
                    if index < components.count { components[index] = port } else { components.append(port) }
                }
            }
        } catch {
            if reuse { scratch = components }
            return .failure(error)
        }
        if components.count > header.componentCount {
            components.removeLast(components.count - header.componentCount)
        }
        let message = PortMessage(msgid: header.msgid, components: components, replyPort: replyPort)
        if reuse { scratch = components }
        return .success(Decoded(message: message, traceID: header.traceID))
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
        guard case var .data(data) = component, data.count == bytes.count, !bytes.isEmpty else {
            component = .data(newData(bytes))
            return
        }
        // The component lets go of its reference first, so that `data` is
        // the only one left if the last handler kept nothing: the write
        // below then happens in place. If anything else still holds these
        // bytes (a handler kept the message or its Data), Data copies on
        // write and what it holds stays as it was.
        component = .data(Data())
        data.withUnsafeMutableBytes { $0.copyMemory(from: bytes) }
        component = .data(data)
    }

    /// Version 1: a frame per component, then the reply port's descriptor.
    private mutating func decodeMultipart(_ frames: IncomingFrames, _ header: WireFormat.Header) -> Result<Decoded, WireFormat.DecodeError> {
        guard frames.frameCount == header.frameCount, frames.keptCount == frames.frameCount else {
            return .failure(.frameCountMismatch(expected: header.frameCount, got: frames.frameCount))
        }
        var message = PortMessage(msgid: header.msgid)
        message.components.reserveCapacity(header.componentCount)
        for index in 1..<max(frames.keptCount, 1) {
            let frame = frames[index]
            guard frame.count <= WireFormat.maxFrameBytes else { return .failure(.frameTooLarge(frame.count)) }
            let component = index - 1
            do throws(WireFormat.DecodeError) {
                if component == header.componentCount {
                    message.replyPort = try frame.withUnsafeBytes { (bytes) throws(WireFormat.DecodeError) in try cache.port(for: bytes) }
                } else if header.kind(at: component) == WireFormat.kindData {
                    message.components.append(.data(frame.data))
                } else {
                    message.components.append(.port(try frame.withUnsafeBytes { (bytes) throws(WireFormat.DecodeError) in try cache.port(for: bytes) }))
                }
            } catch {
                return .failure(error)
            }
        }
        return .success(Decoded(message: message, traceID: header.traceID))
    }
}
