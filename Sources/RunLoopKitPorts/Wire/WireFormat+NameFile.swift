@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A name's lock file (`<name>.lock` in the runtime directory, S-PORT-6)
/// holds its holder's port descriptor, exactly as a message carries it
/// (docs/wire-format.md, "Name files"). The name server writes and reads
/// these bytes; only this file knows their layout and size.
extension WireFormat {
    /// The most bytes a name file holds: a descriptor with the longest path.
    static var maxNameFileBytes: Int { descriptorV2FixedSize + maxIPCPathBytes }

    /// What `address`'s name file holds.
    static func nameFileContents(for address: PortAddress) -> [UInt8] {
        encodeDescriptor(address)
    }

    /// The holder named by a name file's bytes (at most `maxNameFileBytes`).
    static func decodeNameFile(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> PortAddress {
        try decodeDescriptor(bytes)
    }
}
