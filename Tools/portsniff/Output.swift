import Glibc

/// Unbuffered output, so that lines appear as events arrive, even in a pipe.
func emit(_ line: String) { writeAll(1, Array((line + "\n").utf8)) }

func standardError(_ text: String) { writeAll(2, Array(text.utf8)) }

func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return
        }
        offset += written
    }
}
