@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A name's lock file (`<name>.lock` in the runtime directory, S-PORT-6)
/// holds its holder's port descriptor, exactly as a message carries it,
/// and, once a process has found that holder dead, a death mark after it
/// (docs/wire-format.md, "Name files"). The name server writes and reads
/// these bytes; only this file knows their layout and size.
extension WireFormat {
    /// What a name file says: who held the name, and when that holder was
    /// first found dead, if it was.
    struct NameFile: Equatable {
        let holder: PortAddress
        /// CLOCK_REALTIME in nanoseconds since 1970 when a process first
        /// found `holder` dead; nil while nobody has.
        let diedAt: Int64?
    }

    /// "DIED": the death mark that may follow a name file's descriptor.
    static let deathMarkMagic: (UInt8, UInt8, UInt8, UInt8) = (0x44, 0x49, 0x45, 0x44)
    /// The magic, then the time as a little-endian signed 64-bit integer.
    static let deathMarkSize = 12

    /// The most bytes a name file holds: a descriptor with the longest
    /// path, and a death mark.
    static var maxNameFileBytes: Int { descriptorV2FixedSize + maxIPCPathBytes + deathMarkSize }

    /// What `address`'s name file holds when it registers the name.
    static func nameFileContents(for address: PortAddress) -> [UInt8] {
        encodeDescriptor(address)
    }

    /// The death mark written after a dead holder's descriptor.
    static func deathMark(diedAt: Int64) -> [UInt8] {
        var bytes = [deathMarkMagic.0, deathMarkMagic.1, deathMarkMagic.2, deathMarkMagic.3]
        withUnsafeBytes(of: diedAt.littleEndian) { bytes += $0 }
        return bytes
    }

    /// What a name file's bytes say (at most `maxNameFileBytes`): exactly
    /// one descriptor, or one descriptor and one death mark.
    static func decodeNameFile(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> NameFile {
        // The descriptor's length is in its own header (version and path
        // length): anything after it must be exactly one death mark.
        guard let length = descriptorLength(atStartOf: bytes), bytes.count == length + deathMarkSize else {
            return NameFile(holder: try decodeDescriptor(bytes), diedAt: nil)
        }
        guard bytes[length] == deathMarkMagic.0, bytes[length + 1] == deathMarkMagic.1,
              bytes[length + 2] == deathMarkMagic.2, bytes[length + 3] == deathMarkMagic.3 else {
            throw .badDescriptor("\(deathMarkSize) bytes after the descriptor are not a death mark")
        }
        let holder = try decodeDescriptor(UnsafeRawBufferPointer(rebasing: bytes[..<length]))
        let diedAt = Int64(littleEndian: bytes.loadUnaligned(fromByteOffset: length + 4, as: Int64.self))
        return NameFile(holder: holder, diedAt: diedAt)
    }

    /// The length of the descriptor `bytes` start with, as its header says
    /// (nil if they are too short to say).
    private static func descriptorLength(atStartOf bytes: UnsafeRawBufferPointer) -> Int? {
        guard bytes.count >= 8 else { return nil }
        let fixed = switch bytes[4] {
        case descriptorVersionWithHost: descriptorV2FixedSize
        case descriptorVersionTCP: descriptorV3FixedSize
        default: descriptorFixedSize
        }
        return fixed + Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
    }
}
