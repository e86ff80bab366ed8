import FoundationEssentials
import Glibc
import ZeroMQ

/// Guard against hangs: tests that wait for something set this receive or send timeout, so
/// a bug makes them fail with EAGAIN instead of blocking the suite forever.
let hangGuardMilliseconds: Int32 = 10_000

/// A fresh inproc endpoint: tests run in parallel on the shared context, so names must
/// not collide.
func uniqueInprocEndpoint(_ label: String) -> String {
    "inproc://zeromq-tests-\(label)-\(UInt64.random(in: 0...UInt64.max))"
}

/// Two sockets on the shared context, the first bound and the second connected to it
/// over inproc, both with receive timeouts as hang guards.
func connectedSockets(_ boundType: SocketType, _ connectedType: SocketType, label: String) throws -> (bound: Socket, connected: Socket) {
    let endpoint = uniqueInprocEndpoint(label)
    let bound = try ZMQContext.shared.makeSocket(boundType)
    let connected = try ZMQContext.shared.makeSocket(connectedType)
    try bound.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
    try connected.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
    try bound.bind(endpoint)
    try connected.connect(endpoint)
    return (bound, connected)
}

/// Runs `body` on a new POSIX thread and waits for it to finish; the join orders
/// everything the thread did before whatever the caller does next.
func runOnNewThread(_ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {  // handed to exactly one thread
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { argument in
        Unmanaged<Box>.fromOpaque(argument!).takeRetainedValue().body()
        return nil
    }, box)
    precondition(rc == 0, "pthread_create failed: \(rc)")
    pthread_join(thread, nil)
}

/// A new private directory under /tmp (mkdtemp, mode 0700).
func makeTemporaryDirectory() -> String {
    var template = Array("/tmp/zeromq-tests-XXXXXX".utf8CString)
    let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    precondition(made != nil, "mkdtemp failed: errno \(errno)")
    return String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// Removes a directory made by makeTemporaryDirectory and the files directly in it.
func removeTemporaryDirectory(_ path: String) {
    if let directory = opendir(path) {
        while let entry = readdir(directory) {
            // In place: a copy of the whole d_name reads past a short last entry.
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { unlink(path + "/" + name) }
        }
        closedir(directory)
    }
    rmdir(path)
}

/// Makes sure the process may open at least `count` file descriptors, raising the soft
/// limit toward the hard one when needed (each ZeroMQ socket uses one).
func ensureFileDescriptorLimit(atLeast count: rlim_t) {
    var limit = rlimit()
    getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    if limit.rlim_cur < count {
        limit.rlim_cur = min(count, limit.rlim_max)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}

extension Message {
    /// The frame as text, for assertions.
    var string: String { withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
}
