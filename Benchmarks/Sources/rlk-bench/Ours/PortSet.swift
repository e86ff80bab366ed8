import RunLoopKit

/// `portCount` ports scheduled on one LoopThread's loop, all with one
/// handler that counts arrivals; batches of 64-byte messages are sent from
/// the calling thread round-robin over them. One sample per batch: the
/// per-message cost in nanoseconds (batch time / messages).
///
/// Each port holds one fd for receiving, and one more once something sends
/// to it (its sending socket). When the process's fd limit cannot hold both
/// for every port, messages go round-robin over as many ports as it can
/// (`sendingPorts`); every port is still scheduled on the loop.
final class PortSet: Contender {
    let portCount: Int
    let label: String
    private let messages: Int
    private let timeout: Double
    private let fdLimit: Int
    private let placement: Placement
    private var thread: LoopThread?
    private var ports: [Port] = []
    private(set) var sendingPorts = 0
    /// How long making and scheduling the ports took, and releasing them.
    private(set) var setUpSeconds = 0.0
    private(set) var tearDownSeconds = 0.0
    private let counter = ArrivalCounter()
    /// fds held back from the budget for everything else the run opens.
    static let fdReserve = 600

    init(portCount: Int, messages: Int, timeout: Double, fdLimit: Int, placement: Placement) {
        self.placement = placement
        self.portCount = portCount
        self.messages = messages
        self.timeout = timeout
        self.fdLimit = fdLimit
        label = "RunLoopKit, \(portCount) port\(portCount == 1 ? "" : "s") on one loop"
    }

    func setUp() throws {
        let started = monotonicNanoseconds()
        defer { setUpSeconds = secondsSince(started) }
        let thread = try Placement.startedLoopThread("bench-ports-\(portCount)", on: placement.second)
        self.thread = thread
        guard let loop = thread.runLoop else { throw BenchError("LoopThread has no loop") }
        let counter = self.counter
        ports.reserveCapacity(portCount)
        for _ in 0..<portCount {
            let port = try Port(transport: .inproc)
            port.setMessageHandler { _ in counter.arrive() }
            try port.schedule(in: loop, forMode: .default)
            ports.append(port)
        }
        let budget = fdLimit - ProcessStats.openFileDescriptors() - Self.fdReserve
        sendingPorts = min(portCount, budget)
        guard sendingPorts > 0 else { throw BenchError("no fds left to send to \(portCount) ports (limit \(fdLimit))") }
        // One message to each sending port first: its sending socket is made
        // outside the timed batches.
        _ = try PortFlood.sendBatch(to: Array(ports[0..<sendingPorts]), count: sendingPorts, counter: counter,
                                    timeout: timeout, what: label)
    }

    func measure() throws -> [Double] {
        let targets = Array(ports[0..<sendingPorts])
        let elapsed = try Placement.whilePinned(to: placement.first) {
            try PortFlood.sendBatch(to: targets, count: messages, counter: counter, timeout: timeout, what: label)
        }
        return [Double(elapsed) / Double(messages)]
    }

    func tearDown() {
        let started = monotonicNanoseconds()
        defer { tearDownSeconds = secondsSince(started) }
        for port in ports {
            port.setMessageHandler(nil)
            port.invalidate()
        }
        ports = []
        thread?.stop()
        thread = nil
    }
}
