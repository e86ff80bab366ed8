@_spi(RunLoopKitInternals) import RunLoopKitCore

/// What the encoder reads of a component where it lies in its array, so
/// that no component is copied out (a retain and a release of its Data or
/// Port).
extension PortMessage.Component {
    /// A data component's byte count (0 for a port).
    var dataCount: Int {
        if case let .data(data) = self { return data.count }
        return 0
    }

    var isPort: Bool {
        if case .port = self { return true }
        return false
    }

    /// Writes the component's record at `offset` (a data component's bytes,
    /// or a port component's descriptor, `Port.descriptorBytes(relativeLimit:)`)
    /// and returns where the next starts.
    func writeRecord(into buffer: UnsafeMutableRawBufferPointer, at offset: Int, relativeLimit: UInt16) -> Int {
        switch self {
        case let .data(data): data.withUnsafeBytes { WireFormat.writeRecord($0, into: buffer, at: offset) }
        case let .port(port):
            port.descriptorBytes(relativeLimit: relativeLimit).withUnsafeBytes { WireFormat.writeRecord($0, into: buffer, at: offset) }
        }
    }

    /// `writeRecord` in version 5: the length a varint, a version-4
    /// descriptor short (`WireFormat.writeCompactDescriptor`).
    func writeCompactRecord(into buffer: UnsafeMutableRawBufferPointer, at offset: Int, relativeLimit: UInt16) -> Int {
        switch self {
        case let .data(data): data.withUnsafeBytes { WireFormat.writeCompactRecord($0, into: buffer, at: offset) }
        case let .port(port):
            port.descriptorBytes(relativeLimit: relativeLimit).withUnsafeBytes { WireFormat.writeCompactDescriptor($0, into: buffer, at: offset) }
        }
    }
}
