/// Every sender and receiving port of a run has an id unique in the run:
/// the incarnation of the child process that made it (the coordinator
/// numbers incarnations from 1; a replacement for a killed child is a new
/// incarnation) in the high 32 bits, a serial number in that process below.
enum Identifiers {
    static func make(incarnation: UInt32, serial: UInt32) -> UInt64 { UInt64(incarnation) << 32 | UInt64(serial) }

    static func incarnation(of id: UInt64) -> UInt32 { UInt32(id >> 32) }

    static func describe(_ id: UInt64) -> String { "\(id >> 32).\(id & 0xFFFF_FFFF)" }
}
