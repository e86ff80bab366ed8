import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The ports that recently received descriptors named, most recent first,
/// so that a descriptor that keeps arriving (a client's reply port) is
/// decoded and looked up once, not once per message. Small and bounded:
/// it holds the ports, and with them their send channels.
///
/// Threading: its decoder's.
struct DescriptorCache {
    private static let capacity = 8
    private var entries: [(bytes: [UInt8], port: Port)] = []
    /// Where descriptors resolve: the process's registry, or in the fuzzer
    /// (`WireFuzzing`) one of its own for each input.
    private let registry: PortRegistry

    init(registry: PortRegistry = .shared) {
        self.registry = registry
    }

    /// The port `bytes` names, from the cache or decoded and resolved.
    mutating func port(for bytes: UnsafeRawBufferPointer) throws(WireFormat.DecodeError) -> Port {
        for index in entries.indices where Self.same(entries[index].bytes, bytes) {
            if index != 0 { entries.insert(entries.remove(at: index), at: 0) }
            return entries[0].port
        }
        let port = registry.resolve(try WireFormat.decodeDescriptor(bytes))
        entries.insert((Array(bytes), port), at: 0)
        if entries.count > Self.capacity { entries.removeLast() }
        return port
    }

    /// Whether `bytes` are the descriptor resolved last and `port` the port
    /// it named: a reply port that comes back message after message is
    /// then known without looking it up (and without a retain of it).
    func isLatest(_ bytes: UnsafeRawBufferPointer, naming port: Port?) -> Bool {
        guard let port else { return false }
        return entries.withUnsafeBufferPointer { entries in
            !entries.isEmpty && entries[0].port === port && Self.same(entries[0].bytes, bytes)
        }
    }


    /// memcmp, not `elementsEqual`: the generic comparison of an array
    /// with a raw buffer is many times dearer, and runs every message.
    private static func same(_ known: [UInt8], _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard known.count == bytes.count else { return false }
        guard let base = bytes.baseAddress else { return known.isEmpty }
        return known.withUnsafeBytes { memcmp($0.baseAddress!, base, bytes.count) == 0 }
    }
}
