/// Running the jobs of a LoopThread's executors (S-EXEC-1, S-EXEC-2): the
/// loop's block steps and its teardown call these.
extension RunLoop {
    /// Runs one job of the loop's executors, an actor's on the serial
    /// executor and a task job on the task executor, marking it as running
    /// so that a run nested in it runs no other job.
    func runJob(_ job: UnownedJob, isTaskJob: Bool, on executors: LoopState.JobExecutors) {
        jobRunning.store(true, ordering: .relaxed)
        if isTaskJob { job.runSynchronously(on: executors.task!) } else { job.runSynchronously(on: executors.serial!) }
        jobRunning.store(false, ordering: .relaxed)
        warnedAboutBlockedJob.store(false, ordering: .relaxed)
    }

    /// In a run nested in a job: a job of the executor waits and cannot run
    /// until the running one returns. If the running job waits for it in
    /// this nested run, it waits forever: warned once per running job.
    func warnIfAJobWaits() {
        guard !warnedAboutBlockedJob.load(ordering: .relaxed), state.withLock({ $0.blocks.containsJob }) else { return }
        warnedAboutBlockedJob.store(true, ordering: .relaxed)
        logger.warning("""
            LoopThread '\(threadName)': a job of its executor is queued while another job of it runs the loop nested; \
            it runs only after the running job returns, so a job that waits for it in a nested run waits forever
            """)
    }
}
