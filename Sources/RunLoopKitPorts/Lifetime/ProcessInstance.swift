/// Which run of which process a tcp port belongs to (S-NET-1): 128 random
/// bits made when the process first needs them and never again. A pid
/// identifies nothing across hosts (every host has its pid 1, and network
/// namespaces on one host share pids), so a port reached over the network
/// is named by its process's instance and its port id; a process started
/// again has another instance, so a send right to the old one can never
/// reach the new one.
struct ProcessInstance: Hashable, Sendable, CustomStringConvertible {
    let high: UInt64
    let low: UInt64

    /// This process's instance.
    static let current: ProcessInstance = {
        var random = SystemRandomNumberGenerator()
        return ProcessInstance(high: random.next(), low: random.next())
    }()

    static let byteCount = 16

    /// All zeros, never an instance (`current` is random, and 128 zero
    /// bits are as likely as any other draw): what a hello expects when
    /// the dialler does not know who listens (a name lookup at an
    /// endpoint, docs/wire-format.md, "tcp connections").
    static let any = ProcessInstance(high: 0, low: 0)

    /// 32 hexadecimal digits, as logs, errors and portsniff show it.
    var description: String { Self.hex(high) + Self.hex(low) }

    /// The first 8 digits, enough to tell instances apart in a line of text.
    var shortDescription: String { String(description.prefix(8)) }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
