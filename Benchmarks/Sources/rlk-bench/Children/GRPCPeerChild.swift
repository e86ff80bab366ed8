// Built only with the gRPC peer (Package.swift, RLK_BENCH_GRPC).
#if RLK_BENCH_GRPC
import Dispatch
import GRPCCore
import GRPCNIOTransportHTTP2Posix
import Glibc
import Synchronization

/// The `grpc-peer` child: the gRPC side of distributed-call-processes in the
/// other process. A grpc-swift 2 server (grpc-swift-nio-transport's HTTP/2
/// transport on NIOPosix, plain text) listening on the Unix domain socket
/// it was given, serving `GRPCEchoService` on one event loop; it writes
/// "ready" on stdout once it listens. SIGTERM (the parent's tear-down)
/// shuts it down gracefully; so does a minute without a call (the parent is
/// stuck; a dead parent kills it at once through PR_SET_PDEATHSIG).
enum GRPCPeerChild {
    /// Without a call for this long, the child exits.
    static let idleLimitSeconds = 60.0

    static func serve(path: String) -> Int32 {
        // NIO's singleton group, which lives as long as the process, made
        // of one event loop as the parent's client has (the variable is read
        // when the group is first used, below). The server's I/O runs on it,
        // its handlers on Swift's pool, as grpc-swift runs them. A group of
        // our own, shut down once serve() returned, raced the transport's
        // last tasks on it (NIO: "Cannot schedule tasks on an EventLoop that
        // has already shut down").
        setenv("NIO_SINGLETON_GROUP_LOOP_COUNT", "1", 1)
        let tally = EchoTally()
        let server = GRPCServer(
            transport: .http2NIOPosix(address: .unixDomainSocket(path: path), transportSecurity: .plaintext,
                                      eventLoopGroup: .singletonMultiThreadedEventLoopGroup),
            services: [GRPCEchoService(tally: tally)])
        signal(SIGTERM, SIG_IGN)
        let terminate = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .global())
        terminate.setEventHandler { server.beginGracefulShutdown() }
        terminate.resume()
        defer { terminate.cancel() }

        let served = DispatchSemaphore(value: 0)
        let failure = Mutex<String?>(nil)
        Task {
            do { try await server.serve() } catch { failure.withLock { $0 = "\(error)" } }
            served.signal()
        }
        Task {
            // listeningAddress returns once the socket is bound and listening.
            if (try? await server.listeningAddress) != nil { FileHandleOut.out("ready") }
        }
        let watchdog = Task {
            var (count, activity) = (tally.answered, monotonicNanoseconds())
            while !Task.isCancelled {
                // A timer, not a synchronisation: a look every 5 s.
                try? await Task.sleep(for: .seconds(5))
                if tally.answered != count {
                    (count, activity) = (tally.answered, monotonicNanoseconds())
                } else if secondsSince(activity) > idleLimitSeconds {
                    FileHandleOut.error("grpc-peer: no call for \(Int(idleLimitSeconds)) s; exiting")
                    server.beginGracefulShutdown()
                    return
                }
            }
        }
        served.wait()
        watchdog.cancel()
        if let failure = failure.withLock({ $0 }) {
            FileHandleOut.error("grpc-peer: \(failure)")
            return 1
        }
        return 0
    }
}
#endif
