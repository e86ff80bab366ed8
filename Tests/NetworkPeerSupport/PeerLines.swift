// What the tcp tests' programs (`rlk-net-peer`, `rlk-actor-peer`) and the
// tests that run them share: the lines a program prints, and descriptors
// passed on the command line as hex.
import Glibc

/// Writes `line` and a newline to standard output at once (no buffer: a
/// test reads the output while the program runs, and may kill it).
package func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// `bytes` as lowercase hex, two digits a byte.
package func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }.joined()
}

/// The bytes of hex text (a pair that is not hex reads as 0; an odd last digit is dropped).
package func bytes(fromHex text: String) -> [UInt8] {
    var result: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex, let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex) {
        result.append(UInt8(text[index..<next], radix: 16) ?? 0)
        index = next
    }
    return result
}

/// Blocks SIGTERM in the calling thread and the threads it starts from
/// then on (call it before any), so that only `awaitTermination` takes it.
package func blockTermination() {
    var signals = terminationSignals()
    pthread_sigmask(SIG_BLOCK, &signals, nil)
}

/// Waits for SIGTERM (blocked by `blockTermination`), at most `seconds`.
package func awaitTermination(seconds: Int = 120) {
    var signals = terminationSignals()
    var limit = timespec(tv_sec: seconds, tv_nsec: 0)
    _ = sigtimedwait(&signals, nil, &limit)
}

private func terminationSignals() -> sigset_t {
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGTERM)
    return signals
}
