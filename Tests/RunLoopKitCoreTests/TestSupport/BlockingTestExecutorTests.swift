// The executor the tests run on (RunLoopKitTestSupport) keeps its promise:
// a test whose tasks block waiting for one another still ends, where
// Swift's cooperative pool (two threads here) would hold them forever.
import Dispatch
import RunLoopKitTestSupport
import Testing

@Suite("The tests' executor: threads that may block", .blocksThreads)
struct BlockingTestExecutorTests {
    @Test("a dozen tasks of one group, each blocked until all have started, all run: a thread is made for a job that waits while every thread is blocked")
    func blockedTasksDoNotHoldLaterOnes() async {
        let tasks = 12  // more than the pool's threads and the executor's first four
        let started = Counter()
        let allStarted = DispatchSemaphore(value: 0)
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<tasks {
                group.addTask {
                    if started.increment() == tasks {
                        for _ in 0..<tasks { allStarted.signal() }
                    }
                    // A safety net: every task returns false if one never ran.
                    return allStarted.wait(timeout: .now() + 60) == .success
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: true, count: tasks))
        #expect(BlockingTestExecutor.shared.threadCount >= tasks)
    }
}
