/// The ports that recently received descriptors named, most recent first,
/// so that a descriptor that keeps arriving (a client's reply port) is
/// decoded and looked up once, not once per message. Small and bounded:
/// it holds the ports, and with them their send channels.
///
/// Threading: its decoder's.
struct DescriptorCache {
    private static let capacity = 8
    private var entries: [(bytes: [UInt8], port: Port)] = []

    /// The port `bytes` names, from the cache or decoded and resolved.
    mutating func port(for bytes: UnsafeRawBufferPointer) throws(WireFormat.DecodeError) -> Port {
        if let index = entries.firstIndex(where: { $0.bytes.elementsEqual(bytes) }) {
            if index != 0 { entries.insert(entries.remove(at: index), at: 0) }
            return entries[0].port
        }
        let port = Port.resolve(try WireFormat.decodeDescriptor(bytes))
        entries.insert((Array(bytes), port), at: 0)
        if entries.count > Self.capacity { entries.removeLast() }
        return port
    }

    mutating func removeAll() { entries.removeAll() }
}
