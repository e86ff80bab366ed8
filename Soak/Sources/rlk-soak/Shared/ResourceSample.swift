/// One reading of a process's open descriptors and resident set, taken in
/// the quiet state a checkpoint brings every process to.
struct ResourceSample: Codable, Sendable {
    var openDescriptors: Int
    var residentBytes: Int
    /// What malloc has handed out and not had back (mallinfo2: arena
    /// chunks in use and mmapped blocks), the memory the process holds.
    var heapInUseBytes: Int
    /// The descriptors by kind (ProcessProbe.descriptorKinds), to say what changed.
    var descriptorKinds: [String: Int]
    /// The soak's own objects still alive (a child's endpoints), to tell
    /// its own leak from the library's.
    var soakObjects: [String: Int] = [:]

    /// The kinds whose counts differ from `other`'s: "socket +3, anon_inode:[pidfd] -1".
    func descriptorChanges(since other: ResourceSample) -> String {
        let kinds = Set(descriptorKinds.keys).union(other.descriptorKinds.keys).sorted()
        return kinds.compactMap { kind in
            let change = (descriptorKinds[kind] ?? 0) - (other.descriptorKinds[kind] ?? 0)
            return change == 0 ? nil : "\(kind) \(change > 0 ? "+" : "")\(change)"
        }.joined(separator: ", ")
    }

    var residentMiB: Double { Double(residentBytes) / 1_048_576 }
    var heapInUseMiB: Double { Double(heapInUseBytes) / 1_048_576 }
}
