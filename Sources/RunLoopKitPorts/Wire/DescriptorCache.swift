import Glibc
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The ports that recently received descriptors named, most recent first,
/// so that a descriptor that keeps arriving (a client's reply port) is
/// decoded and looked up once, not once per message. Small and bounded:
/// it holds the ports, and with them their send channels.
///
/// Threading: its decoder's.
struct DescriptorCache {
    private static let capacity = 8
    /// A version-4 descriptor's entry keeps the home it was read against
    /// (the same 16 bytes from another peer name another port), and its
    /// tag (`IncomingFrames.senderTag`); a full descriptor's neither (0).
    private var entries: [(bytes: [UInt8], sender: TCPHome?, senderTag: UInt, port: Port)] = []
    /// Where descriptors resolve: the process's registry, or in the fuzzer
    /// (`WireFuzzing`) one of its own for each input.
    private let registry: PortRegistry

    init(registry: PortRegistry = .shared) {
        self.registry = registry
    }

    /// How many version-4 descriptors this process, and this cache,
    /// resolved (not found in a cache): for tests and the fuzzer, which
    /// check that they are used.
    package static let relativeDescriptorsResolved = Atomic<Int>(0)
    private(set) var relativeResolved = 0

    /// The port `bytes` names, from the cache or decoded and resolved;
    /// `frames`: the message's, whose sender (the home of the process at
    /// the other end of the tcp connection it came over) version 4 is read
    /// against.
    mutating func port(for bytes: UnsafeRawBufferPointer, of frames: IncomingFrames) throws(WireFormat.DecodeError) -> Port {
        let tag = frames.senderTag
        for index in entries.indices where Self.same(entries[index].bytes, bytes) && Self.sameSender(entries[index].senderTag, tag) {
            if index != 0 { entries.insert(entries.remove(at: index), at: 0) }
            return entries[0].port
        }
        let port = registry.resolve(try WireFormat.decodeDescriptor(bytes, sender: frames.sender))
        if WireFormat.isRelativeDescriptor(bytes) {
            relativeResolved += 1
            Self.relativeDescriptorsResolved.wrappingAdd(1, ordering: .relaxed)
            entries.insert((Array(bytes), frames.sender, tag, port), at: 0)
        } else {
            entries.insert((Array(bytes), nil, 0, port), at: 0)
        }
        if entries.count > Self.capacity { entries.removeLast() }
        return port
    }

    /// Whether `bytes`, in a message held in `frames`, are the descriptor
    /// resolved last and `port` the port it named: a reply port that comes
    /// back message after message is then known without looking it up
    /// (and without a retain of it).
    func isLatest(_ bytes: UnsafeRawBufferPointer, of frames: IncomingFrames, naming port: Port?) -> Bool {
        guard let port else { return false }
        return entries.withUnsafeBufferPointer { entries in
            !entries.isEmpty && entries[0].port === port && Self.same(entries[0].bytes, bytes)
                && Self.sameSender(entries[0].senderTag, frames.senderTag)
        }
    }

    /// An entry kept no home (a full descriptor's: the same whoever sent
    /// it), or the message's (the entry holds it: its address is not reused).
    @inline(__always)
    private static func sameSender(_ kept: UInt, _ sender: UInt) -> Bool {
        kept == 0 || kept == sender
    }


    /// memcmp, not `elementsEqual`: the generic comparison of an array
    /// with a raw buffer is many times dearer, and runs every message.
    private static func same(_ known: [UInt8], _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard known.count == bytes.count else { return false }
        guard let base = bytes.baseAddress else { return known.isEmpty }
        return known.withUnsafeBytes { memcmp($0.baseAddress!, base, bytes.count) == 0 }
    }
}
