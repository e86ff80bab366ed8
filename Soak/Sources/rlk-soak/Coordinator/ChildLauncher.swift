import Glibc
import Subprocess
import SystemPackage

/// Spawns a child (this same executable, with `child` and its options)
/// with swift-subprocess, and keeps its task waiting for the coordinator's
/// order: SIGKILL it, or let it end by itself. The task records how it ended.
enum ChildLauncher {
    /// This executable's path.
    static let executable: String = {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { Console.fatal("cannot read /proc/self/exe: errno \(errno)") }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// `RLK_SOAK_ANCHOR_PREFIX`, a command (and its arguments) the first
    /// child, the one never killed, runs under: `heaptrack`, say, to see
    /// what holds its memory.
    private static let anchorPrefix: [String] = {
        guard let prefix = getenv("RLK_SOAK_ANCHOR_PREFIX") else { return [] }
        return String(cString: prefix).split(separator: " ").map(String.init)
    }()

    static func launch(_ record: ChildRecord, options: ChildOptions) {
        var command = [Self.executable] + options.arguments
        if record.slot == 0 && record.incarnation == 1 { command = Self.anchorPrefix + command }
        Task.detached {
            do {
                let result = try await run(
                    command.count > options.arguments.count + 1 ? .name(command[0]) : .path(FilePath(command[0])),
                    arguments: Arguments(Array(command.dropFirst())),
                    input: .none, output: .currentStandardOutput, error: .currentStandardError
                ) { execution in
                    record.started(pid: execution.processIdentifier.value)
                    if await record.nextOrder() == .kill {
                        record.killing(at: MonotonicTime.now())
                        try execution.send(signal: .kill)
                    }
                }
                let status = result.terminationStatus
                record.ended(status.description, cleanly: status == .exited(0), bySignal9: status == .signaled(SIGKILL))
            } catch {
                record.ended("could not be run: \(error)", cleanly: false, bySignal9: false)
            }
        }
    }
}
