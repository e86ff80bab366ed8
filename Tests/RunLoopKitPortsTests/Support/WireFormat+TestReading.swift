// Readers of the wire format that only the tests need: the product's
// decoders read records and kinds in place, one at a time; a test wants
// them all at once, to compare with what it wrote.
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts

extension WireFormat {
    /// Walks the records of a packed frame (`bytes` is the whole frame):
    /// calls `body` with each record's index and bytes, in order. Throws if
    /// a length runs past the frame's end or bytes are left after the last,
    /// as the decoder does.
    static func readPackedRecords(
        _ bytes: UnsafeRawBufferPointer, header: Header,
        _ body: (Int, UnsafeRawBufferPointer) throws(DecodeError) -> Void
    ) throws(DecodeError) {
        var records = PackedRecords(bytes, header: header)
        for index in 0..<header.recordCount { try body(index, try records.next()) }
        try records.finish()
    }
}

extension WireFormat.Header {
    /// The kinds of all the components, in order, read from `frame`.
    func kinds(in frame: UnsafeRawBufferPointer) -> [UInt8] {
        (0..<componentCount).map { kind(at: $0, in: frame) }
    }
}
