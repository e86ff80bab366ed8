// Built only with the gRPC peer (Package.swift, RLK_BENCH_GRPC).
#if RLK_BENCH_GRPC
import EchoService
import GRPCCore

/// The gRPC peer's service, served by the grpc-peer child: the unary
/// `Echo` of Benchmarks/Proto/echo.proto, answering the value it was sent,
/// as `PortEchoActor.echo(_:)` does.
struct GRPCEchoService: Rlkbench_Echo.SimpleServiceProtocol {
    let tally: EchoTally

    func echo(request: Rlkbench_EchoRequest, context: ServerContext) async throws -> Rlkbench_EchoReply {
        tally.count()
        return .with { $0.value = request.value }
    }
}
#endif
