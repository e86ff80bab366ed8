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
        if header.compactRecords { return compactRecord(index, of: bytes, header: header) }
        var offset = header.size
        for _ in 0..<index {
            offset += recordLengthSize + Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
        return UnsafeRawBufferPointer(rebasing: bytes[(offset + recordLengthSize)..<(offset + recordLengthSize + length)])
    }

    /// `packedRecord` in a version-5 frame, whose record lengths are varints.
    private static func compactRecord(_ index: Int, of bytes: UnsafeRawBufferPointer, header: Header) -> UnsafeRawBufferPointer {
        var offset = header.size
        var length = 0
        for _ in 0...index {
            offset += length
            length = Int(readVarint(bytes, at: &offset).unsafelyUnwrapped)
        }
        return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
    }

    /// The one record of a packed frame that holds one data component and
    /// nothing else (`Header.isOneDataComponent`), checked: one comparison
    /// of its length with the frame's, in version 2 and in version 5 with a
    /// length of one byte (under 128); a longer record in version 5, or a
    /// malformed frame, takes the walk, which says what is wrong.
    @inline(__always)
    static func onlyRecord(of bytes: UnsafeRawBufferPointer, header: Header) throws(DecodeError) -> UnsafeRawBufferPointer {
        if header.compactRecords {
            let start = header.size + 1
            if bytes.count >= start, bytes[header.size] < 0x80, Int(bytes[header.size]) == bytes.count - start {
                return UnsafeRawBufferPointer(rebasing: bytes[start...])
            }
        } else {
            let start = header.size + recordLengthSize
            if bytes.count >= start
                && Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: header.size, as: UInt32.self))) == bytes.count - start {
                return UnsafeRawBufferPointer(rebasing: bytes[start...])
            }
        }
        return try walkedOnlyRecord(of: bytes, header: header)
    }

    @inline(never)
    private static func walkedOnlyRecord(of bytes: UnsafeRawBufferPointer, header: Header) throws(DecodeError) -> UnsafeRawBufferPointer {
        var records = PackedRecords(bytes, header: header)
        let record = try records.next()
        try records.finish()
        return record
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
        /// Version 5: lengths are varints.
        private let compact: Bool

        init(_ bytes: UnsafeRawBufferPointer, header: Header) {
            self.bytes = bytes
            offset = header.size
            compact = header.compactRecords
        }

        /// The next record. Throws if its length or its bytes run past the
        /// frame's end.
        @inline(__always)
        mutating func next() throws(DecodeError) -> UnsafeRawBufferPointer {
            if compact { return try nextCompact() }
            guard bytes.count - offset >= recordLengthSize else {
                throw .badPackedRecords("the frame ends before the length of record \(index)")
            }
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            offset += recordLengthSize
            return try record(of: length)
        }

        /// `next` in version 5, out of line: the usual record pays a test for it.
        @inline(never)
        private mutating func nextCompact() throws(DecodeError) -> UnsafeRawBufferPointer {
            guard let value = WireFormat.readVarint(bytes, at: &offset), value <= UInt64(maxFrameBytes) else {
                throw .badPackedRecords("record \(index)'s length: a varint that runs past the frame, or over \(maxFrameBytes)")
            }
            return try record(of: Int(value))
        }

        /// The record of `length` bytes at `offset`, after its length.
        @inline(__always)
        private mutating func record(of length: Int) throws(DecodeError) -> UnsafeRawBufferPointer {
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
