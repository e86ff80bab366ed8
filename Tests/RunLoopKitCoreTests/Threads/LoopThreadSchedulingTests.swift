// LoopThread.Scheduling: a loop thread keeps the kernel's time slice unless
// asked to be latency-sensitive (docs/design.md, "How a loop thread is scheduled").
import CLinuxSupport
import Glibc
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("LoopThread scheduling", .blocksThreads)
struct LoopThreadSchedulingTests {
    static let shortSlice: UInt64 = 100_000

    /// Whether this kernel keeps a thread's own time slice (Linux 6.12 and
    /// later): asked on a throwaway thread, whose scheduling then ends.
    static let kernelKeepsSlices = (try? SpawnedThread<Bool>(named: "lt-slice-probe") {
        LoopThread.Scheduling.latencySensitive.applyToCurrentThread()
    }.join()) ?? false

    @Test("by default a LoopThread asks for no slice: scheduled as any thread its starter makes")
    func defaultIsInherited() throws {
        #expect(LoopThread(name: "lt-unstarted").scheduling == .inherited)
        let (starter, worker) = try SpawnedThread<(UInt64, UInt64)>(named: "lt-default") {
            // A starter with the short slice: the default must not keep it either way.
            _ = LoopThread.Scheduling.latencySensitive.applyToCurrentThread()
            let worker = LoopThread(name: "lt-plain")
            try worker.start()
            defer { worker.stop() }
            return (rlk_thread_time_slice(rlk_gettid()), worker.threadID.map(rlk_thread_time_slice) ?? .max)
        }.join()
        // A thread made by one with the short slice starts with the kernel's
        // default (reset-on-fork), as a pthread_create'd thread does.
        #expect(worker != Self.shortSlice)
        #expect(worker != .max)
        if Self.kernelKeepsSlices { #expect(starter == Self.shortSlice) }
    }

    @Test("a latency-sensitive LoopThread asks for the short time slice, and its thread keeps it")
    func latencySensitiveAsksForTheShortSlice() throws {
        let worker = LoopThread(name: "lt-slice", scheduling: .latencySensitive)
        #expect(worker.scheduling == .latencySensitive)
        #expect(LoopThread.Scheduling.latencySensitiveSlice == .microseconds(100))
        try worker.start()
        defer { worker.stop() }
        let tid = try #require(worker.threadID)
        // A thread the loop thread makes starts with the kernel's default.
        let madeThreadSlice = try worker.performAndWait {
            try SpawnedThread<UInt64>(named: "lt-slice-child") { rlk_thread_time_slice(rlk_gettid()) }.join()
        }
        #expect(madeThreadSlice != Self.shortSlice)
        if Self.kernelKeepsSlices {
            #expect(rlk_thread_time_slice(tid) == Self.shortSlice)
        } else {
            // A kernel before 6.12 keeps no slice of a thread's own.
            #expect(rlk_thread_time_slice(tid) != Self.shortSlice)
        }
    }

    @Test("an inherited scheduling leaves the thread with the slice of the thread that started it")
    func inheritedKeepsTheStartersSlice() throws {
        let (starter, worker) = try SpawnedThread<(UInt64, UInt64)>(named: "lt-starter") {
            // Back to the kernel's default slice, whatever thread made this one.
            _ = rlk_set_current_thread_time_slice(0)
            let worker = LoopThread(name: "lt-inherit", scheduling: .inherited)
            try worker.start()
            defer { worker.stop() }
            return (rlk_thread_time_slice(rlk_gettid()), worker.threadID.map(rlk_thread_time_slice) ?? .max)
        }.join()
        #expect(worker == starter)
        #expect(starter != Self.shortSlice)
        #expect(LoopThread.Scheduling.inherited.applyToCurrentThread())
    }

    @Test("applying the short slice keeps the thread's nice value, which it could not lower again")
    func niceValueIsKept() throws {
        let worker = LoopThread(name: "lt-nice", scheduling: .inherited)
        try worker.start()
        defer { worker.stop() }
        let (applied, nice, slice) = try worker.performAndWait { () -> (Bool, Int32, UInt64) in
            // Linux's nice value is the calling thread's (who 0).
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 7)
            let applied = LoopThread.Scheduling.latencySensitive.applyToCurrentThread()
            errno = 0
            return (applied, getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0), rlk_thread_time_slice(rlk_gettid()))
        }
        #expect(nice == 7)
        #expect(applied == Self.kernelKeepsSlices)
        if Self.kernelKeepsSlices { #expect(slice == Self.shortSlice) }
    }
}
