@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Port descriptors: how a port travels in a message and sits in a name
/// file (docs/wire-format.md, "Port descriptor").
extension WireFormat {
    /// Layout (docs/wire-format.md): magic "RLKD", version, transport
    /// (0 inproc only, 1 ipc), ipc path length, pid, process start time,
    /// port id, in version 2 the host id, then the path bytes. An ipc port
    /// whose host is known is written as version 2; anything else as 1.
    static func encodeDescriptor(_ address: PortAddress) -> [UInt8] {
        let path = Array((address.ipcPath ?? "").utf8)
        let host = address.ipcPath == nil ? nil : address.hostID
        let fixed = host == nil ? descriptorFixedSize : descriptorV2FixedSize
        var bytes = [UInt8](repeating: 0, count: fixed + path.count)
        bytes.withUnsafeMutableBytes { buffer in
            buffer[0] = descriptorMagic.0
            buffer[1] = descriptorMagic.1
            buffer[2] = descriptorMagic.2
            buffer[3] = descriptorMagic.3
            buffer[4] = host == nil ? version : descriptorVersionWithHost
            buffer[5] = address.ipcPath == nil ? 0 : 1
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
        let transport = bytes[5]
        let pathLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        guard bytes.count == fixed + pathLength else {
            throw .badDescriptor("path length \(pathLength) does not match the frame's \(bytes.count) bytes (version \(descriptorVersion))")
        }
        let pid = Int32(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        let startTime = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
        let portID = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 20, as: UInt64.self))
        var ipcPath: String?
        switch transport {
        case 0:
            guard pathLength == 0 else { throw .badDescriptor("an inproc descriptor with a path") }
            guard descriptorVersion == version else { throw .badDescriptor("a version-2 descriptor is always ipc (transport 1)") }
        case 1:
            guard pathLength > 0, pathLength <= maxIPCPathBytes else {
                throw .badDescriptor("ipc path of \(pathLength) bytes (1 to \(maxIPCPathBytes) allowed)")
            }
            let pathBytes = UnsafeRawBufferPointer(rebasing: bytes[fixed...])
            guard let path = String(validating: pathBytes, as: UTF8.self), path.hasPrefix("/"), !path.contains("\0") else {
                throw .badDescriptor("ipc path is not an absolute UTF-8 path")
            }
            ipcPath = path
        default:
            throw .badDescriptor("unknown transport \(transport)")
        }
        guard pid > 0 else { throw .badDescriptor("pid \(pid)") }
        var host: HostIdentity?
        if descriptorVersion == descriptorVersionWithHost {
            host = HostIdentity(high: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 28, as: UInt64.self)),
                                low: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 36, as: UInt64.self)))
        }
        return PortAddress(pid: pid, startTime: startTime, portID: portID, ipcPath: ipcPath, hostID: host)
    }
}
