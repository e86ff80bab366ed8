/// Version 3's extension area, as a sender writes it (docs/wire-format.md,
/// "The extension area"); `readHeader` reads it.
extension WireFormat {
    /// The fields a version-3 message carries: a destination over tcp, a
    /// trace context on any transport.
    struct ExtensionFields {
        let destination: Destination?
        let trace: PortTraceContext?

        /// The area's bytes, its length included.
        var areaSize: Int { extensionLengthSize + fieldsSize }

        private var fieldsSize: Int {
            var size = 0
            if destination != nil { size += extensionFieldHeaderSize + destinationFieldSize }
            if let trace {
                size += extensionFieldHeaderSize + traceParentFieldSize
                if let state = trace.traceState { size += extensionFieldHeaderSize + state.utf8.count }
            }
            return size
        }

        /// Writes the area (its length, then the fields) at `start`.
        func write(into buffer: UnsafeMutableRawBufferPointer, at start: Int) {
            buffer.storeBytes(of: UInt32(fieldsSize).littleEndian, toByteOffset: start, as: UInt32.self)
            var offset = start + extensionLengthSize
            if let destination {
                offset = field(fieldDestination, size: destinationFieldSize, into: buffer, at: offset)
                buffer.storeBytes(of: destination.instance.high.littleEndian, toByteOffset: offset, as: UInt64.self)
                buffer.storeBytes(of: destination.instance.low.littleEndian, toByteOffset: offset + 8, as: UInt64.self)
                buffer.storeBytes(of: destination.portID.littleEndian, toByteOffset: offset + 16, as: UInt64.self)
                offset += destinationFieldSize
            }
            guard let trace else { return }
            offset = field(fieldTraceParent, size: traceParentFieldSize, into: buffer, at: offset)
            buffer[offset] = 0  // W3C's version 00
            buffer.storeBytes(of: trace.traceIDHigh.bigEndian, toByteOffset: offset + 1, as: UInt64.self)
            buffer.storeBytes(of: trace.traceIDLow.bigEndian, toByteOffset: offset + 9, as: UInt64.self)
            buffer.storeBytes(of: trace.parentID.bigEndian, toByteOffset: offset + 17, as: UInt64.self)
            buffer[offset + 25] = trace.flags
            offset += traceParentFieldSize
            guard let state = trace.traceState else { return }
            offset = field(fieldTraceState, size: state.utf8.count, into: buffer, at: offset)
            for (index, byte) in state.utf8.enumerated() { buffer[offset + index] = byte }
        }

        /// A field's type and length; returns where its bytes go.
        private func field(_ type: UInt16, size: Int, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
            buffer.storeBytes(of: type.littleEndian, toByteOffset: offset, as: UInt16.self)
            buffer.storeBytes(of: UInt16(size).littleEndian, toByteOffset: offset + 2, as: UInt16.self)
            return offset + extensionFieldHeaderSize
        }
    }
}
