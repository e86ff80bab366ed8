@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Version 2, the packed form: the whole message in one frame (docs/wire-format.md, "Packed").
extension WireFormat {
    /// The packed size of a message whose multipart frames add up to
    /// `frameBytes` (header included), with `records` components and reply port.
    static func packedSize(frameBytes: Int, records: Int) -> Int { frameBytes + records * recordLengthSize }

    /// Writes a whole message in the packed form into `buffer` (at least
    /// `packedSize` bytes): the header with version 2, then each component
    /// and the reply port's descriptor as a length and its bytes. Returns
    /// the size used. A port component's record is its port's descriptor
    /// (`Port.descriptorBytes(relativeLimit:)`).
    static func writePacked(
        into buffer: UnsafeMutableRawBufferPointer, msgid: UInt32, components: [PortMessage.Component],
        replyDescriptor: [UInt8]?, traceID: UInt64?, relativeLimit: UInt16 = 0
    ) -> Int {
        var offset = writeHeader(into: buffer, msgid: msgid, hasReplyPort: replyDescriptor != nil,
                                 components: components, traceID: traceID, packed: true)
        // Each record writes at the offset the previous one returns: no
        // variable captured by a closure, which would take a dynamic
        // exclusivity check per record. By index, each component read in
        // place: a `for component in components` would copy each one out,
        // retaining and releasing its Data or Port.
        for index in components.indices {
            offset = components[index].writeRecord(into: buffer, at: offset, relativeLimit: relativeLimit)
        }
        if let replyDescriptor {
            // A constant copy: a closure that read `offset` itself would
            // capture the variable, and pay a dynamic exclusivity check.
            let at = offset
            offset = replyDescriptor.withUnsafeBytes { writeRecord($0, into: buffer, at: at) }
        }
        return offset
    }

    /// Writes a message of one data component, `bytes`, in the packed form
    /// (what `writePacked` writes for `[.data(bytes)]`); returns the size used.
    static func writePacked(
        into buffer: UnsafeMutableRawBufferPointer, msgid: UInt32, bytes: UnsafeRawBufferPointer,
        replyDescriptor: [UInt8]?, traceID: UInt64?
    ) -> Int {
        var offset = writeHeader(into: buffer, msgid: msgid, hasReplyPort: replyDescriptor != nil, dataComponents: 1,
                                 traceID: traceID, packed: true)
        offset = writeRecord(bytes, into: buffer, at: offset)
        if let replyDescriptor {
            let at = offset
            offset = replyDescriptor.withUnsafeBytes { writeRecord($0, into: buffer, at: at) }
        }
        return offset
    }

    /// Writes one record (its length, then its bytes) at `offset`; returns where the next starts.
    @inline(__always)
    static func writeRecord(_ bytes: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        buffer.storeBytes(of: UInt32(bytes.count).littleEndian, toByteOffset: offset, as: UInt32.self)
        let start = offset + recordLengthSize
        if let base = bytes.baseAddress, !bytes.isEmpty {
            (buffer.baseAddress! + start).copyMemory(from: base, byteCount: bytes.count)
        }
        return start + bytes.count
    }

    /// Record `index` of a packed frame whose records were checked already
    /// (`PackedRecords` walked them all when it was decoded): found by
    /// stepping over the lengths before it, nothing checked again.
    static func packedRecord(_ index: Int, of bytes: UnsafeRawBufferPointer, header: Header) -> UnsafeRawBufferPointer {
        var offset = header.size
        for _ in 0..<index {
            offset += recordLengthSize + Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        return UnsafeRawBufferPointer(rebasing: bytes[(offset + recordLengthSize)..<(offset + recordLengthSize + length)])
    }

    /// The records of a packed frame, one at a time, for a caller that fills
    /// its own variables as it goes (a walk calling a closure for each record
    /// would take a dynamic exclusivity check per access of what it
    /// captured). The caller reads `header.recordCount` records, then calls
    /// `finish`. (No optional tuple per record: the decoder would make and
    /// take one apart for every record.)
    struct PackedRecords {
        private let bytes: UnsafeRawBufferPointer
        private var offset: Int
        private var index = 0

        init(_ bytes: UnsafeRawBufferPointer, header: Header) {
            self.bytes = bytes
            offset = header.size
        }

        /// The next record. Throws if its length or its bytes run past the
        /// frame's end.
        @inline(__always)
        mutating func next() throws(DecodeError) -> UnsafeRawBufferPointer {
            guard bytes.count - offset >= recordLengthSize else {
                throw .badPackedRecords("the frame ends before the length of record \(index)")
            }
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            offset += recordLengthSize
            guard bytes.count - offset >= length else {
                throw .badPackedRecords("record \(index) announces \(length) bytes, \(bytes.count - offset) are left")
            }
            let record = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
            offset += length
            index += 1
            return record
        }

        /// After the last record: throws if bytes are left in the frame.
        @inline(__always)
        func finish() throws(DecodeError) {
            guard offset == bytes.count else {
                throw .badPackedRecords("\(bytes.count - offset) bytes after the last record")
            }
        }
    }
}
