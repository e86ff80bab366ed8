import ZeroMQ
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
        if case let .tcp(endpoint) = address.route { return encodeTCPDescriptor(address, endpoint) }
        let route = address.route
        let path = Array(route.descriptorPath.utf8)
        let host = route.descriptorHost
        let fixed = host == nil ? descriptorFixedSize : descriptorV2FixedSize
        var bytes = [UInt8](repeating: 0, count: fixed + path.count)
        bytes.withUnsafeMutableBytes { buffer in
            writeDescriptorStart(buffer, version: host == nil ? version : descriptorVersionWithHost, transport: route.descriptorKind)
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

    /// Every descriptor's first six bytes: the magic, the version and the transport.
    private static func writeDescriptorStart(_ buffer: UnsafeMutableRawBufferPointer, version: UInt8, transport: UInt8) {
        buffer[0] = descriptorMagic.0
        buffer[1] = descriptorMagic.1
        buffer[2] = descriptorMagic.2
        buffer[3] = descriptorMagic.3
        buffer[4] = version
        buffer[5] = transport
    }

    /// The version `encodeDescriptor` writes for `address`.
    static func descriptorVersion(of address: PortAddress) -> UInt8 {
        if case .tcp = address.route { return descriptorVersionTCP }
        return address.route.descriptorHost == nil ? version : descriptorVersionWithHost
    }

    /// A descriptor from a message: version 4 too, read against `sender`,
    /// the home of the process at the other end of the tcp connection the
    /// message came over (nil elsewhere, where version 4 is malformed).
    static func decodeDescriptor(_ bytes: UnsafeRawBufferPointer, sender: TCPHome?) throws(DecodeError) -> PortAddress {
        if bytes.count > 0 && bytes[0] == descriptorVersionRelative { return try decodeShortRelativeDescriptor(bytes, sender: sender) }
        guard bytes.count >= 5, bytes[4] == descriptorVersionRelative else { return try decodeDescriptor(bytes) }
        return try decodeRelativeDescriptor(bytes, sender: sender)
    }

    static func decodeDescriptor(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> PortAddress {
        guard bytes.count >= descriptorFixedSize else { throw .badDescriptor("\(bytes.count) bytes, under \(descriptorFixedSize)") }
        guard bytes[0] == descriptorMagic.0, bytes[1] == descriptorMagic.1, bytes[2] == descriptorMagic.2, bytes[3] == descriptorMagic.3 else {
            throw .badDescriptor("bad magic")
        }
        let descriptorVersion = bytes[4]
        if descriptorVersion == descriptorVersionTCP { return try decodeTCPDescriptor(bytes) }
        if descriptorVersion == descriptorVersionRelative {
            throw .badDescriptor("version 4 names a port relative to a tcp connection, and stands nowhere else")
        }
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

    // MARK: - Version 3: a tcp port

    /// A tcp port's descriptor (docs/wire-format.md, "Version 3"): version
    /// 1's fixed part (transport 2; the path length is the endpoint's; pid
    /// and start time for people, not identity), then the owner's instance,
    /// the security byte and the server's CURVE public key (zeros for plain
    /// text or none), then the endpoint text (none for a process that only
    /// connects).
    private static func encodeTCPDescriptor(_ address: PortAddress, _ endpoint: TCPTransport.Endpoint) -> [UInt8] {
        let text = Array((endpoint.listener ?? "").utf8)
        var bytes = [UInt8](repeating: 0, count: descriptorV3FixedSize + text.count)
        bytes.withUnsafeMutableBytes { buffer in
            writeDescriptorStart(buffer, version: descriptorVersionTCP, transport: PortRoute.tcp(endpoint).descriptorKind)
            buffer.storeBytes(of: UInt16(text.count).littleEndian, toByteOffset: 6, as: UInt16.self)
            buffer.storeBytes(of: UInt32(bitPattern: address.pid).littleEndian, toByteOffset: 8, as: UInt32.self)
            buffer.storeBytes(of: address.startTime.littleEndian, toByteOffset: 12, as: UInt64.self)
            buffer.storeBytes(of: address.portID.littleEndian, toByteOffset: 20, as: UInt64.self)
            buffer.storeBytes(of: endpoint.instance.high.littleEndian, toByteOffset: 28, as: UInt64.self)
            buffer.storeBytes(of: endpoint.instance.low.littleEndian, toByteOffset: 36, as: UInt64.self)
            buffer[44] = endpoint.serverKey == nil ? TCPTransport.securityPlain : TCPTransport.securityCurve
            if let key = endpoint.serverKey {
                for (index, byte) in key.bytes.enumerated() { buffer[45 + index] = byte }
            }
            for (index, byte) in text.enumerated() { buffer[descriptorV3FixedSize + index] = byte }
        }
        return bytes
    }

    private static func decodeTCPDescriptor(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> PortAddress {
        let length = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        guard bytes.count == descriptorV3FixedSize + length else {
            throw .badDescriptor("endpoint length \(length) does not match the frame's \(bytes.count) bytes (version 3)")
        }
        guard bytes[5] == PortRoute.tcpDescriptorKind else { throw .badDescriptor("a version-3 descriptor is always tcp (transport 2), not \(bytes[5])") }
        let pid = Int32(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        let startTime = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
        let portID = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 20, as: UInt64.self))
        let instance = ProcessInstance(high: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 28, as: UInt64.self)),
                                       low: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 36, as: UInt64.self)))
        let listener = try TCPTransport.decodedListener(UnsafeRawBufferPointer(rebasing: bytes[descriptorV3FixedSize...]))
        let keyBytes = Array(bytes[45..<(45 + CurveKey.byteCount)])
        var serverKey: CurveKey?
        switch bytes[44] {
        case TCPTransport.securityCurve:
            guard listener != nil else { throw .badDescriptor("a CURVE key with no endpoint (a process that only connects has none)") }
            serverKey = try? CurveKey(bytes: keyBytes)
        case TCPTransport.securityPlain:
            guard keyBytes.allSatisfy({ $0 == 0 }) else { throw .badDescriptor("a key with security 0 (plain text)") }
        default:
            throw .badDescriptor("unknown security \(bytes[44])")
        }
        guard pid > 0 else { throw .badDescriptor("pid \(pid)") }
        let endpoint = TCPTransport.Endpoint(instance: instance, listener: listener, serverKey: serverKey)
        return PortAddress(pid: pid, startTime: startTime, portID: portID, route: .tcp(endpoint))
    }

    // MARK: - Version 4: a tcp port of the sender, relative to the connection

    /// Whether `bytes`, a descriptor `decodeDescriptor(_:sender:)` read, is
    /// version 4, in its full form or its short one (which starts `04`).
    static func isRelativeDescriptor(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes[0] == descriptorVersionRelative || bytes[4] == descriptorVersionRelative
    }

    /// Version 4 (docs/wire-format.md, "Home frames and relative
    /// descriptors"): magic, version 4, transport 2, the position of the
    /// port's endpoint in its process's home frame (`noListener`: none), a
    /// reserved 0, then the port id.
    static func encodeRelativeDescriptor(portID: UInt64, listener position: UInt8) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: relativeDescriptorSize)
        bytes.withUnsafeMutableBytes { buffer in
            writeDescriptorStart(buffer, version: descriptorVersionRelative, transport: PortRoute.tcpDescriptorKind)
            buffer[6] = position
            buffer.storeBytes(of: portID.littleEndian, toByteOffset: 8, as: UInt64.self)
        }
        return bytes
    }

    private static func decodeRelativeDescriptor(_ bytes: UnsafeRawBufferPointer, sender: TCPHome?) throws(DecodeError) -> PortAddress {
        guard bytes.count == relativeDescriptorSize else {
            throw .badDescriptor("a version-4 descriptor of \(bytes.count) bytes, not \(relativeDescriptorSize)")
        }
        guard bytes[0] == descriptorMagic.0, bytes[1] == descriptorMagic.1, bytes[2] == descriptorMagic.2, bytes[3] == descriptorMagic.3 else {
            throw .badDescriptor("bad magic")
        }
        guard bytes[5] == PortRoute.tcpDescriptorKind else { throw .badDescriptor("a version-4 descriptor is always tcp (transport 2), not \(bytes[5])") }
        guard bytes[7] == 0 else { throw .badDescriptor("a version-4 descriptor's reserved byte is \(bytes[7]), not 0") }
        guard let sender else {
            throw .badDescriptor("version 4 arrived where no sender's home frame came first (only over a tcp connection whose peer sent one)")
        }
        let portID = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        return try sender.address(portID: portID, listener: bytes[6])
    }
}
