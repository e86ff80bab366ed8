import FoundationEssentials
import Glibc
import Testing
import ZeroMQ
import RunLoopKitTestSupport

/// ZMQError: libzmq errno values mapped to a typed, descriptive Swift error.
@Suite(.blocksThreads) struct ErrorTests {
    @Test func describesOperationReasonAndErrno() {
        let error = ZMQError(code: EADDRINUSE, operation: "zmq_bind(tcp://127.0.0.1:5555)")
        #expect(error.message == "Address already in use")
        #expect(error.description == "zmq_bind(tcp://127.0.0.1:5555) failed: Address already in use (errno \(EADDRINUSE))")
    }

    @Test func predicatesMatchTheirCodes() {
        #expect(ZMQError(code: EAGAIN, operation: "x").isWouldBlock)
        #expect(!ZMQError(code: EAGAIN, operation: "x").isInterrupted)
        #expect(ZMQError(code: EINTR, operation: "x").isInterrupted)
        #expect(!ZMQError(code: EINTR, operation: "x").isWouldBlock)
        // ETERM is libzmq's own code, ZMQ_HAUSNUMERO + 53; zmq_strerror knows its text.
        let terminated = ZMQError(code: 156_384_712 + 53, operation: "zmq_msg_recv")
        #expect(terminated.isContextTerminated)
        #expect(terminated.message == "Context was terminated")
        #expect(!ZMQError(code: EINTR, operation: "x").isContextTerminated)
    }

    @Test func equalityComparesCodeAndOperation() {
        #expect(ZMQError(code: EINVAL, operation: "a") == ZMQError(code: EINVAL, operation: "a"))
        #expect(ZMQError(code: EINVAL, operation: "a") != ZMQError(code: EINVAL, operation: "b"))
        #expect(ZMQError(code: EINVAL, operation: "a") != ZMQError(code: EAGAIN, operation: "a"))
    }

    @Test func bindingAnUnknownTransportReportsTheCallAndErrno() throws {
        let socket = try ZMQContext.shared.makeSocket(.pair)
        let error = #expect(throws: ZMQError.self) { try socket.bind("bogus://nowhere") }
        #expect(error?.code == EPROTONOSUPPORT)
        #expect(error?.operation == "zmq_bind(bogus://nowhere)")
        #expect(error?.description.contains("Protocol not supported") == true)
        #expect(error?.description.contains("errno \(EPROTONOSUPPORT)") == true)
    }

    @Test func bindingATcpEndpointWithoutPortIsInvalid() throws {
        let socket = try ZMQContext.shared.makeSocket(.pair)
        let error = #expect(throws: ZMQError.self) { try socket.bind("tcp://127.0.0.1") }
        #expect(error?.code == EINVAL)
        #expect(error?.description.hasPrefix("zmq_bind(tcp://127.0.0.1) failed: Invalid argument") == true)
    }

    @Test func bindingIpcInAMissingDirectoryNamesThePath() throws {
        let socket = try ZMQContext.shared.makeSocket(.pull)
        let endpoint = "ipc:///nonexistent-zeromq-tests-dir/socket"
        let error = #expect(throws: ZMQError.self) { try socket.bind(endpoint) }
        #expect(error?.code == ENOENT)
        #expect(error?.operation == "zmq_bind(\(endpoint))")
    }

    @Test func unknownOptionIsReportedByNumber() throws {
        let socket = try ZMQContext.shared.makeSocket(.pair)
        let setError = #expect(throws: ZMQError.self) { try socket.setOption(9_999, Int32(1)) }
        #expect(setError == ZMQError(code: EINVAL, operation: "zmq_setsockopt(option 9999)"))
        let getError = #expect(throws: ZMQError.self) { try socket.int32Option(9_999) }
        #expect(getError == ZMQError(code: EINVAL, operation: "zmq_getsockopt(option 9999)"))
    }

    @Test func namedOptionFailureIsReportedByName() throws {
        let socket = try ZMQContext.shared.makeSocket(.dealer)
        // A routing id must be 1 to 255 bytes.
        let error = #expect(throws: ZMQError.self) { try socket.setRoutingID(Data(repeating: 7, count: 256)) }
        #expect(error == ZMQError(code: EINVAL, operation: "zmq_setsockopt(ZMQ_ROUTING_ID)"))
    }
}
