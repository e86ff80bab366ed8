import CBenchPeers
import Glibc

/// The machine a run was made on, as docs/performance.md records it.
struct MachineInfo: Codable, Sendable {
    let cpus: Int
    let cpuModel: String
    let kernel: String
    let swift: String
    let libzmq: String

    static func current() -> MachineInfo {
        let cpuinfo = ProcessStats.readSmallFile("/proc/cpuinfo") ?? ""
        let model = cpuinfo.split(separator: "\n")
            .first { $0.hasPrefix("model name") }
            .flatMap { $0.split(separator: ":", maxSplits: 1).last }
            .map { String($0.drop { $0 == " " || $0 == "\t" }) } ?? "unknown"
        var names = utsname()
        uname(&names)
        let release = withUnsafeBytes(of: names.release) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let machine = withUnsafeBytes(of: names.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
        bench_zmq_version(&major, &minor, &patch)
        return MachineInfo(
            cpus: Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))),
            cpuModel: model,
            kernel: "Linux \(release) \(machine)",
            swift: swiftCompilerVersion,
            libzmq: "\(major).\(minor).\(patch)")
    }
}

/// The compiler that built rlk-bench (Swift has no runtime query for it).
let swiftCompilerVersion: String = {
    #if compiler(>=6.4)
    return "6.4 or later"
    #elseif compiler(>=6.3.1)
    return "6.3.1"
    #elseif compiler(>=6.3)
    return "6.3"
    #else
    return "before 6.3"
    #endif
}()
