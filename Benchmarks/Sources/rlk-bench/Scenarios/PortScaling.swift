import Glibc

/// DESIGN.md: 10,000 ports on one loop; per-message cost ≤ 2 × the 1-port
/// case. Measures the whole curve (1, 10, 100, 1,000, 10,000 ports), each
/// port count interleaved with a fresh 1-port set so that drift cancels.
struct PortScaling: Scenario {
    let name = "port-scaling"
    let summary = "per-message cost with 1, 10, 100, 1,000 and 10,000 ports on one loop (messages round-robin from one thread)"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let fdLimit = ProcessStats.raiseFileDescriptorLimit()
        var results: [ScenarioResult] = []
        let messages = config.scalingMessages
        var largest: (ports: Int, sending: Int)?
        for count in config.scalingPortCounts where count > 1 {
            let baseline = PortSet(portCount: 1, messages: messages, timeout: config.timeoutSeconds, fdLimit: fdLimit,
                                   placement: config.placement)
            let set = PortSet(portCount: count, messages: messages, timeout: config.timeoutSeconds, fdLimit: fdLimit,
                              placement: config.placement)
            // The 1-port set first: it is set up first, and the big set then
            // takes what is left of the fd budget.
            let measured = interleave([baseline, set], repetitions: config.scalingRepetitions, better: .lower)
            var notes = ["\(config.scalingRepetitions) batches × \(messages) messages per side, interleaved with a 1-port set; cost = batch time / messages",
                         "making and scheduling the \(count) ports took \(format(set.setUpSeconds)) s, invalidating them \(format(set.tearDownSeconds)) s"]
            if set.sendingPorts > 0 && set.sendingPorts < count {
                notes.append("fd limit \(fdLimit) (hard; setrlimit cannot raise it): all \(count) ports are scheduled, but messages go round-robin to \(set.sendingPorts) of them — each port needs 1 fd to receive and 1 more for its sending socket")
            }
            results.append(ScenarioResult(
                name: "port-scaling-\(count)", title: "per-message cost, \(count) ports on one loop vs 1 port",
                unit: "ns/msg", better: .lower, ours: measured[1], peer: measured[0],
                target: count == 10_000 ? .ratioAtMost(2) : nil,
                notes: notes, parameter: Double(count)))
            largest = (count, set.sendingPorts > 0 ? set.sendingPorts : count)
        }
        if let largest { results.append(transportScaling(config, ports: largest.ports, sockets: largest.sending)) }
        if config.quick && !config.scalingPortCounts.contains(10_000) {
            if !results.isEmpty {
                results[results.count - 1].notes.append("--quick stops at \(config.scalingPortCounts.last ?? 0) ports; the 10,000-port point (the DESIGN.md target) is in the full run")
            }
        }
        return results
    }

    /// The same pattern on raw libzmq, many sockets against one: how much of
    /// the cost of many ports is the transport's own (every message to
    /// another socket wakes that socket's pipe, and a working set of
    /// thousands of sockets no longer fits in the cache). Informational.
    private func transportScaling(_ config: RunConfig, ports: Int, sockets: Int) -> ScenarioResult {
        // libzmq closes the ports' sockets on its reaper thread, a little
        // after they are invalidated: wait (10 s at most) for their fds.
        let needed = 2 * sockets + 64
        let fdLimit = ProcessStats.raiseFileDescriptorLimit()
        for _ in 0..<1000 where fdLimit - ProcessStats.openFileDescriptors() < needed { usleep(10_000) }
        let one = RawZMQFanIn(sockets: 1, messages: config.scalingMessages, timeout: config.timeoutSeconds, placement: config.placement)
        let many = RawZMQFanIn(sockets: sockets, messages: config.scalingMessages, timeout: config.timeoutSeconds,
                               placement: config.placement)
        let measured = interleave([one, many], repetitions: config.scalingRepetitions, better: .lower)
        return ScenarioResult(
            name: "port-scaling-\(ports)-raw", title: "libzmq's own scaling: \(sockets) sockets vs 1, same pattern, no run loop",
            unit: "ns/msg", better: .lower, ours: measured[1], peer: measured[0], target: nil,
            notes: ["the transport's part of port-scaling-\(ports): raw libzmq, \(sockets) PULL sockets (as many as messages went to there) against 1, messages round-robin from one thread, each signalled socket drained to EAGAIN"],
            parameter: nil)
    }
}
