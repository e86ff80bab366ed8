@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Port descriptors: how a port travels in a message and sits in a name
/// file (docs/wire-format.md, "Port descriptor").
extension WireFormat {
    /// Layout (docs/wire-format.md): magic "RLKD", version, transport
    /// (`PortRoute.descriptorKind`: 0 inproc only, 1 ipc), path length,
    /// pid, process start time, port id, in version 2 the host id, then the
    /// path bytes. A route that names its host is written as version 2;
    /// anything else as 1.
    static func encodeDescriptor(_ address: PortAddress) -> [UInt8] {
        let route = address.route
        let path = Array(route.descriptorPath.utf8)
        let host = route.descriptorHost
        let fixed = host == nil ? descriptorFixedSize : descriptorV2FixedSize
        var bytes = [UInt8](repeating: 0, count: fixed + path.count)
        bytes.withUnsafeMutableBytes { buffer in
            buffer[0] = descriptorMagic.0
            buffer[1] = descriptorMagic.1
            buffer[2] = descriptorMagic.2
            buffer[3] = descriptorMagic.3
            buffer[4] = host == nil ? version : descriptorVersionWithHost
            buffer[5] = route.descriptorKind
            buffer.storeBytes(of: UInt16(path.count).littleEndian, toByteOffset: 6, as: UInt16.self)
            buffer.storeBytes(of: UInt32(bitPattern: address.pid).littleEndian, toByteOffset: 8, as: UInt32.self)
            buffer.storeBytes(of: address.startTime.littleEndian, toByteOffset: 12, as: UInt64.self)
            buffer.storeBytes(of: address.portID.littleEndian, toByteOffset: 20, as: UInt64.self)
            if let host {
                buffer.storeBytes(of: host.high.littleEndian, toByteOffset: 28, as: UInt64.self)
                buffer.storeBytes(of: host.low.littleEndian, toByteOffset: 36, as: UInt64.self)
            }
            for (index, byte) in path.enumerated() { buffer[fixed + index] = byte }
        }
        return bytes
    }

    static func decodeDescriptor(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> PortAddress {
        guard bytes.count >= descriptorFixedSize else { throw .badDescriptor("\(bytes.count) bytes, under \(descriptorFixedSize)") }
        guard bytes[0] == descriptorMagic.0, bytes[1] == descriptorMagic.1, bytes[2] == descriptorMagic.2, bytes[3] == descriptorMagic.3 else {
            throw .badDescriptor("bad magic")
        }
        let descriptorVersion = bytes[4]
        guard descriptorVersion == version || descriptorVersion == descriptorVersionWithHost else {
            throw .badDescriptor("unsupported version \(descriptorVersion)")
        }
        let fixed = descriptorVersion == version ? descriptorFixedSize : descriptorV2FixedSize
        let pathLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        guard bytes.count == fixed + pathLength else {
            throw .badDescriptor("path length \(pathLength) does not match the frame's \(bytes.count) bytes (version \(descriptorVersion))")
        }
        let pid = Int32(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        let startTime = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
        let portID = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 20, as: UInt64.self))
        var host: HostIdentity?
        if descriptorVersion == descriptorVersionWithHost {
            host = HostIdentity(high: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 28, as: UInt64.self)),
                                low: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 36, as: UInt64.self)))
        }
        let route = try PortRoute.decoded(kind: bytes[5], path: UnsafeRawBufferPointer(rebasing: bytes[fixed...]), host: host)
        guard pid > 0 else { throw .badDescriptor("pid \(pid)") }
        return PortAddress(pid: pid, startTime: startTime, portID: portID, route: route)
    }
}
