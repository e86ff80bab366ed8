/// docs/performance.md ("Targets"): the main queue drained by RunLoopKit's
/// RunLoop.main (S-EXEC-3) against Foundation's RunLoop.main: what each run
/// loop costs around libdispatch's own drain. ≤ 1.0 × Foundation's time a
/// block, guarded; measured as a rate, so the ratio must be at least 1.
struct MainQueueDrain: Scenario {
    let name = "main-queue-drain"
    let summary = "DispatchQueue.main blocks drained by RunLoopKit's RunLoop.main vs Foundation's RunLoop.main"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (count, timeout, placement) = (config.mainQueueBlocks, config.timeoutSeconds, config.placement)
        // Each batch in a fresh process (InFreshProcess.swift): Foundation's
        // drain settles, for a whole process, at one of two rates.
        let childArguments = [placement.mode.rawValue, String(count), String(Int(timeout))]
        let measured = interleave([
            InFreshProcess(["main-queue-drain-rlk"] + childArguments, timeout: timeout * 3),
            InFreshProcess(["main-queue-drain-foundation"] + childArguments, timeout: timeout * 3),
        ], repetitions: config.throughputRepetitions, better: .higher)
        let sizes = "\(config.throughputRepetitions) batches × \(count) empty DispatchQueue.main blocks per side, each batch in a fresh process after a warm-up batch there, queued from a LoopThread, interleaved; a batch ends when its last block has run on the main thread"
        return [
            ScenarioResult(
                name: "main-queue-drain", title: "DispatchQueue.main blocks run by RunLoop.main on the main thread",
                unit: "blocks/s", better: .higher, ours: measured[0], peer: measured[1], target: .ratioAtLeast(1.0).standing(.guarded),
                notes: [sizes, "both drain through libdispatch's _dispatch_main_queue_callback_4CF; the target, ≤ 1.0× Foundation's time a block, read as a rate"]),
        ]
    }
}
