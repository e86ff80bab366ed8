/// The checks, made on what the coordinator gathered, and the summary.
struct Verdict {
    private let options: SoakOptions
    private let gathered: Gathered
    private(set) var problems: [String] = []
    private var streamsChecked = 0
    private var worstNotice: Double?
    private var noticesChecked = 0
    private var resourceLines: [String] = []
    private var statistics = ChildStatistics()

    var passed: Bool { problems.isEmpty }

    init(options: SoakOptions, gathered: Gathered) {
        self.options = options
        self.gathered = gathered
        problems = gathered.failures
        checkChildViolations()
        checkStreamsThatLivedToTheEnd()
        checkFalseInvalidations()
        checkKills()
        checkResources()
    }

    /// Whatever a child saw go wrong on its own (duplicates, reorderings,
    /// gaps and mismatched end markers on any stream, unexpected errors).
    private mutating func checkChildViolations() {
        for report in gathered.drainReports.sorted(by: { $0.incarnation < $1.incarnation }) {
            statistics.add(report.statistics)
            if report.violationCount > 0 {
                problems.append("child \(report.incarnation) saw \(report.violationCount) violations, first: \(report.violationSamples.joined(separator: " | "))")
            }
            if !report.drainComplete {
                problems.append("child \(report.incarnation): the drain did not complete within its limit")
            }
        }
    }

    /// Every stream whose sender and receiver both lived to the end: all of
    /// it arrived, once each, in order.
    private mutating func checkStreamsThatLivedToTheEnd() {
        let expected = gathered.stopReports.reduce(0) { count, report in
            count + report.streams.filter { gathered.liveEndpoints.contains($0.destination) }.count
        }
        for report in gathered.drainReports {
            for result in report.results {
                streamsChecked += 1
                let sent = result.expectation.sent
                if result.received != sent || result.violations > 0 {
                    problems.append("stream \(Identifiers.describe(result.expectation.key.senderID))/\(result.expectation.key.streamID) to endpoint \(Identifiers.describe(result.expectation.destination)): sent \(sent), received \(result.received) in order, \(result.violations) out of order")
                }
            }
        }
        if streamsChecked != expected {
            problems.append("\(expected) streams lived to the end, but the receivers reported \(streamsChecked)")
        }
        if expected == 0 { problems.append("no stream lived to the end: nothing was checked") }
    }

    /// A port of a live process, alive at the end, that a sender found invalid.
    private mutating func checkFalseInvalidations() {
        for report in gathered.stopReports {
            for id in report.suspectedEndpoints where gathered.liveEndpoints.contains(id) {
                problems.append("child \(report.incarnation) found endpoint \(Identifiers.describe(id)) invalid, but it was alive at the end")
            }
        }
    }

    /// Every send right (in the children alive at the end, and the
    /// coordinator's own) to a killed child's ports became invalid, within
    /// the bound.
    private mutating func checkKills() {
        for kill in gathered.kills {
            var latest: UInt64? = kill.coordinatorRecord.controlInvalidInstant
            noticesChecked += 1
            if latest == nil { problems.append("the coordinator's send right to killed child \(kill.incarnation) never became invalid") }
            for report in gathered.drainReports {
                guard let record = report.notices.first(where: { $0.incarnation == kill.incarnation }), record.held > 0 else { continue }
                noticesChecked += record.held
                if record.noticed < record.held {
                    problems.append("child \(report.incarnation): \(record.held - record.noticed) of \(record.held) send rights to killed child \(kill.incarnation) (pid \(kill.pid)) never became invalid")
                }
                if record.noticed > 0 { latest = max(latest ?? 0, record.latestNotice) }
            }
            guard let latest else { continue }
            let delay = latest >= kill.instant ? MonotonicTime.seconds(latest - kill.instant) : 0
            worstNotice = max(worstNotice ?? 0, delay)
            if delay > options.invalidationBound {
                problems.append("a send right to killed child \(kill.incarnation) became invalid \(String(format3: delay)) s after SIGKILL, over the \(options.invalidationBound) s bound")
            }
        }
    }

    /// Each process that lived from the warm-up checkpoint to the end:
    /// the same open descriptors, and a resident set at most 10 % above.
    private mutating func checkResources() {
        for (incarnation, final) in gathered.finals.sorted(by: { $0.key < $1.key }) {
            let who = incarnation == 0 ? "coordinator" : "child \(incarnation)"
            guard let base = gathered.baselines[incarnation] else {
                resourceLines.append("\(who): started after the warm-up: fds \(final.openDescriptors), RSS \(String(format1: final.residentMiB)) MiB, heap in use \(String(format1: final.heapInUseMiB)) MiB (not checked)")
                continue
            }
            let growth = (Double(final.residentBytes) / Double(base.residentBytes) - 1) * 100
            resourceLines.append("\(who): fds \(base.openDescriptors) -> \(final.openDescriptors), RSS \(String(format1: base.residentMiB)) -> \(String(format1: final.residentMiB)) MiB (\(growth >= 0 ? "+" : "")\(String(format1: growth)) %), heap in use \(String(format1: base.heapInUseMiB)) -> \(String(format1: final.heapInUseMiB)) MiB")
            if final.openDescriptors != base.openDescriptors {
                problems.append("\(who): \(final.openDescriptors) fds open at the end, \(base.openDescriptors) after the warm-up (\(final.descriptorChanges(since: base)); soak objects \(base.soakObjects) -> \(final.soakObjects))")
            }
            if growth > 10 {
                problems.append("\(who): RSS grew \(String(format1: growth)) % after the warm-up (limit 10 %)")
            }
        }
    }

    func printSummary() {
        let restarts = statistics.workerRestarts
        let lines = [
            "",
            "rlk-soak summary (\(String(format1: gathered.elapsed)) s in all, \(options.seconds) s of load, seed \(options.seed))",
            "  processes   \(options.children) children at a time, \(gathered.kills.count) killed and replaced; \(gathered.children.count) lived to the end",
            "  messages    \(statistics.messagesSent) sent, \(statistics.messagesReceived) received (by the processes that lived to the end); \(statistics.sendTimeouts) sends timed out (retried)",
            "  streams     \(streamsChecked) lived to the end, all checked; \(statistics.streamsVerifiedByMarker) closed early and verified by their end marker; \(statistics.streamsEndedByInvalidDestination) ended by an invalid destination",
            "  events      \(restarts) LoopThread restarts, \(statistics.endpointInvalidations) port invalidations, \(statistics.handlerSwaps) handler swaps, \(statistics.nestedRuns) nested runs, \(statistics.batchLimitChanges) maxMessagesPerCallout changes",
            "  kills       \(noticesChecked) send rights to killed children checked; worst invalidation delay after SIGKILL \(worstNotice.map { "\(String(format3: $0)) s" } ?? "n/a") (bound \(options.invalidationBound) s)",
        ] + resourceLines.map { "  resources   \($0)" } + (warmUpNote.map { ["  note        \($0)"] } ?? [])
        for line in lines { Console.say(line) }
        if passed {
            Console.say("rlk-soak: PASS")
        } else {
            for problem in problems { Console.warn("rlk-soak: FAIL: \(problem)") }
            Console.warn("rlk-soak: FAIL (\(problems.count) problems)")
        }
    }

    private var warmUpNote: String? {
        options.seconds < 300 ? "a short run: the warm-up is \(String(format1: options.warmUp)) s, and the leak checks see little churn" : nil
    }
}

extension String {
    init(format1 value: Double) { self = String(Double(Int((value * 10).rounded())) / 10) }
    init(format3 value: Double) { self = String(Double(Int((value * 1000).rounded())) / 1000) }
}
