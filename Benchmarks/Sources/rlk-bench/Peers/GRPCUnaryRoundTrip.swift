// Built only with the gRPC peer (Package.swift, RLK_BENCH_GRPC).
#if RLK_BENCH_GRPC
import EchoService
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import Glibc
import NIOPosix
import RunLoopKit
import Synchronization

/// The typed RPC a Swift user would otherwise pick between two processes:
/// a grpc-swift 2 unary call (`Rlkbench_Echo.Client.echo`, the same small
/// value as the distributed call, as a protobuf message) to the grpc-peer
/// child over HTTP/2 on a Unix domain socket in the run directory
/// (grpc-swift-nio-transport, NIOPosix, plain text). The client's event
/// loop (one thread) runs on `first` beside the caller, a task preferring a
/// LoopThread there as RunLoopKit's side does (TimedCalls); the whole child
/// on `second`. One sample per call, in µs.
final class GRPCUnaryRoundTrip: Contender {
    let label = "grpc-swift 2 unary, HTTP/2 over a Unix domain socket (a child process)"
    private let iterations: Int
    private let warmup: Int
    private let timeout: Double
    private let placement: Placement
    private let recorder: SampleRecorder
    private var caller: LoopThread?
    private var child: ChildProcess?
    private var socketPath: String?
    private var group: MultiThreadedEventLoopGroup?
    private var client: GRPCClient<HTTP2ClientTransport.Posix>?
    private var connections: Task<Void, any Error>?

    init(iterations: Int, warmup: Int, timeout: Double, placement: Placement) {
        self.iterations = iterations
        self.warmup = warmup
        self.timeout = timeout
        self.placement = placement
        recorder = SampleRecorder(capacity: iterations)
    }

    private static let serials = Mutex(0)

    func setUp() throws {
        caller = try Placement.startedLoopThread("bench-caller", on: placement.first)
        let serial = Self.serials.withLock { serial in
            serial += 1
            return serial
        }
        let path = "\(RunDirectory.path)/grpc-echo-\(serial).sock"
        socketPath = path
        let child = try ChildProcess(role: "grpc-peer", cpu: placement.second, arguments: [path], captureOutput: true)
        self.child = child
        let line = try child.readLine(within: 20)
        guard line == "ready" else { throw BenchError("the grpc-peer child said \"\(line)\", not \"ready\"") }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.group = group
        try pin(group.next(), to: placement.first)
        let client = GRPCClient(
            transport: try .http2NIOPosix(target: .unixDomainSocket(path: path), transportSecurity: .plaintext, eventLoopGroup: group))
        self.client = client
        connections = Task { try await client.runConnections() }
    }

    func measure() throws -> [Double] {
        guard let caller, let client else { throw BenchError("not set up") }
        let echo = Rlkbench_Echo.Client(wrapping: client)
        return try TimedCalls.measure(on: caller, recorder: recorder, warmup: warmup, samples: iterations, timeout: timeout) { value in
            let reply = try await echo.echo(.with { $0.value = Int64(value) })
            return Int(reply.value)
        }
    }

    func tearDown() {
        client?.beginGracefulShutdown()
        if let connections {
            _ = try? awaitBlocking(seconds: 5, what: "the gRPC client's shutdown") { try await connections.value }
        }
        connections = nil
        client = nil
        try? group?.syncShutdownGracefully()
        group = nil
        if let child {
            kill(child.pid, SIGTERM)
            child.finish(within: 3)
        }
        child = nil
        if let socketPath { unlink(socketPath) }
        socketPath = nil
        caller?.stop()
        caller = nil
    }
}
#endif
