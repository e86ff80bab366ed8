import CBenchPeers
import Glibc
import RunLoopKit

/// The hidden roles rlk-bench plays when it spawns itself as the other
/// process of an ipc scenario, or to measure a side in a fresh process
/// (`measure`, InFreshProcess.swift): `rlk-bench --child <role> <parent pid> ...`.
enum ChildRoles {
    /// Message ids the parent and the `rlk-peer` child speak.
    enum Msgid {
        static let ping: UInt32 = 1        // answered on the reply port with `pong`, same components
        static let pong: UInt32 = 2
        static let pingKeepingReplyPort: UInt32 = 3  // as ping, but the child keeps the reply port referenced
        static let data: UInt32 = 10       // counted
        static let endOfBatch: UInt32 = 11 // answered with the count since the last one (8 bytes, little-endian)
        static let tcpPorts: UInt32 = 12   // answered with up to 250 of the child's tcp ports, from the index in its data (UInt32)
        static let quit: UInt32 = 99       // answered, then the child exits
    }

    /// Runs the role in `arguments` (after `--child`: role, parent pid, cpu,
    /// the role's own arguments); returns the exit status.
    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count >= 3, let parent = pid_t(arguments[1]), let cpu = Int32(arguments[2]) else {
            FileHandleOut.error("rlk-bench --child: expected <role> <parent pid> <cpu> ...")
            return 2
        }
        // Never outlive the parent, even if it is killed.
        bench_die_with_parent(parent)
        // Before any thread exists, so that every thread of the child inherits it.
        Placement.pin(0, to: cpu)
        let rest = Array(arguments.dropFirst(3))
        switch arguments[0] {
        case "zmq-peer" where rest.count == 3:
            // Gives up after 60 s without traffic.
            return bench_zmq_child_serve(rest[0], rest[1], rest[2], 60_000) == 0 ? 0 : 1
        case "zmq-tcp-peer" where rest.count == 1:
            if RawTimeSlice.asked { LoopThread.Scheduling.latencySensitive.applyToCurrentThread() }
            return bench_zmq_tcp_child_serve(rest[0] == "curve" ? 1 : 0, 60_000) == 0 ? 0 : 1
        case "rlk-peer" where rest.count == 1 || rest.count == 3:
            let tcp = rest.count == 3 ? RLKPeerChild.TCPPorts(security: rest[1] == "plain" ? .plainText : .curve, count: Int(rest[2]) ?? 1) : nil
            return RLKPeerChild.serve(name: rest[0], tcp: tcp)
        case "dist-peer" where rest.count == 1:
            return DistributedPeerChild.serve(name: rest[0])
        #if RLK_BENCH_GRPC
        case "grpc-peer" where rest.count == 1:
            return GRPCPeerChild.serve(path: rest[0])
        #endif
        case "measure":
            return MeasureChild.run(rest)
        case "memory" where rest.count == 2:
            guard let kind = MemoryChild.Kind(rawValue: rest[0]), let units = Int(rest[1]), units > 0 else { break }
            return MemoryChild.run(kind, units: units)
        default:
            break
        }
        FileHandleOut.error("rlk-bench --child: unknown role or arguments: \(arguments)")
        return 2
    }
}

/// Writes straight to fd 1 or 2 (no buffering to lose at exit).
enum FileHandleOut {
    static func out(_ line: String) { write(1, line + "\n") }
    static func error(_ line: String) { write(2, line + "\n") }

    private static func write(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
    }
}
