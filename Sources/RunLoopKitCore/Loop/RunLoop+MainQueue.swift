/// The main queue as an input of the main thread's loop (S-EXEC-3): taking
/// it on the first run there, the eventfd joining the common modes' wait
/// sets, and the check a pass makes (`MainQueue` keeps its state).
extension RunLoop {
    /// Whether this run should drain the main queue now rather than sleep.
    @inline(__always)
    func isMainQueueDue(_ snapshot: ModeSnapshot) -> Bool {
        snapshot.holdsMainQueue && mainQueue?.isDue == true
    }

    /// The first run of the main loop on the main thread takes the main
    /// queue: its eventfd joins every common mode's wait set (S-EXEC-3).
    func takeOnFirstRun(_ mainQueue: MainQueue) {
        guard let descriptor = mainQueue.takeHandleOnFirstRun() else { return }
        changeItems { state in
            state.mainQueueDescriptor = descriptor
            for name in state.commonModeNames { mainQueueJoins(name, descriptor, &state) }
        }
    }

    /// The main queue's eventfd joins a common mode's wait set (S-EXEC-3).
    /// Under the loop's lock.
    func mainQueueJoins(_ mode: Mode, _ descriptor: Int32, _ state: inout LoopState) {
        do {
            try state.withMode(mode) { (items) throws(RunLoopError) in
                try waiter.register(descriptor, token: WaitSet.mainQueueToken, edgeTriggered: false, in: &items.waitSet)
            }
        } catch {
            logger.error("the main queue could not join common mode \(mode): DispatchQueue.main blocks will not run while it runs: \(error)")
        }
    }
}
