// pingpong: two named LoopThreads exchange PortMessages. "ping" sends
// msgid 1 with a 64-byte data component (its sequence number in the first 8
// bytes, little-endian) and its own port as the reply port; "pong" answers on
// the reply port with msgid 2 and the same data. `--count N` runs N round
// trips and prints the mean round-trip time.
import RunLoopKit
import Synchronization
import Dispatch
import Glibc

func parseCount() -> Int {
    var count = 10_000
    var arguments = CommandLine.arguments.dropFirst()
    while let argument = arguments.popFirst() {
        if argument == "--count", let value = arguments.popFirst().flatMap(Int.init), value > 0 {
            count = value
        } else {
            print("usage: pingpong [--count N]")
            exit(2)
        }
    }
    return count
}
let count = parseCount()

let pingThread = LoopThread(name: "ping")
let pongThread = LoopThread(name: "pong")
try pingThread.start()
try pongThread.start()

let pingPort = try Port(transport: .inproc)
let pongPort = try Port(transport: .inproc)
let pingMsgid: UInt32 = 1
let pongMsgid: UInt32 = 2

/// 64 bytes: the sequence number, then filler.
func payload(_ sequence: Int) -> Data {
    var data = Data(repeating: 0x2A, count: 64)
    withUnsafeBytes(of: UInt64(sequence).littleEndian) { data.replaceSubrange(0..<8, with: $0) }
    return data
}
let finished = DispatchSemaphore(value: 0)
let state = Mutex((sent: 0, start: UInt64(0), end: UInt64(0)))

func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

// pong: answer every ping on its reply port.
pongPort.setMessageHandler { message in
    do {
        try message.replyPort?.send(msgid: pongMsgid, components: message.components, before: Date() + 5)
    } catch {
        print("pong: reply failed: \(error)")
    }
}
// ping: count the answer and send the next ping, until done.
pingPort.setMessageHandler { message in
    let next: Int? = state.withLock { state in
        guard state.sent < count else { state.end = now(); return nil }
        state.sent += 1
        return state.sent
    }
    guard let next else { finished.signal(); return }
    do {
        try pongPort.send(msgid: pingMsgid, components: [.data(payload(next))], replyPort: pingPort, before: Date() + 5)
    } catch {
        print("ping: send failed: \(error)")
        finished.signal()
    }
}
try pongPort.schedule(in: pongThread.runLoop!, forMode: .default)
try pingPort.schedule(in: pingThread.runLoop!, forMode: .default)

// The first ping, from the ping thread itself.
try pingThread.perform {
    state.withLock { $0.sent = 1; $0.start = now() }
    do {
        try pongPort.send(msgid: pingMsgid, components: [.data(payload(1))], replyPort: pingPort, before: Date() + 5)
    } catch {
        print("ping: first send failed: \(error)")
        finished.signal()
    }
}
finished.wait()
let (sent, start, end) = state.withLock { ($0.sent, $0.start, $0.end) }
let mean = Double(end - start) / Double(sent) / 1000
print("pingpong: \(sent) round trips of a 64-byte PortMessage between threads 'ping' and 'pong'")
print("mean round trip: \((mean * 100).rounded() / 100) µs")
// Shown now, not at exit: the exit first sends what the tap still holds
// for a reader, which may take up to the exit bound (Port.exitBound).
fflush(nil)  // every stream: stdout is not Sendable
pingPort.invalidate()
pongPort.invalidate()
pingThread.stop()
pongThread.stop()
