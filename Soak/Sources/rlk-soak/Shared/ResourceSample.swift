/// One reading of a process's open descriptors and resident set, taken in
/// the quiet state a checkpoint brings every process to.
struct ResourceSample: Codable, Sendable {
    var openDescriptors: Int
    var residentBytes: Int

    var residentMiB: Double { Double(residentBytes) / 1_048_576 }
}
