import Glibc

/// Lines written straight to a file descriptor, so that the lines of the
/// coordinator and its children interleave as they happen even through a pipe.
enum Console {
    static func say(_ line: String) { write(line, to: 1) }

    static func warn(_ line: String) { write(line, to: 2) }

    private static func write(_ line: String, to descriptor: Int32) {
        let bytes = Array((line + "\n").utf8)
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    /// A violation of an invariant of the soak itself (not of RunLoopKit):
    /// the run cannot go on meaningfully.
    static func fatal(_ line: String) -> Never {
        warn("rlk-soak: FATAL: \(line)")
        exit(2)
    }
}
