import Dispatch
import Synchronization

/// Errors of the benchmark itself (as opposed to the measured code's).
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A one-shot signal from the measured threads to the measuring one, with a
/// deadline: no scenario may hang rlk-bench, whatever the code under test does.
final class Gate: Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    func open() { semaphore.signal() }

    /// Waits for `open()`; throws after `seconds`.
    func wait(seconds: Double, for what: @autoclosure () -> String) throws {
        if semaphore.wait(timeout: .now() + seconds) == .timedOut {
            throw BenchError("timed out after \(seconds) s waiting for \(what())")
        }
    }
}

/// Samples written by exactly one thread at a time, handed over through a
/// `Gate` (whose semaphore orders the writes before the reads).
///
/// @unchecked Sendable: the measured thread writes while the measuring one
/// waits on the gate; the measuring one reads only after the gate opened.
/// Storage is preallocated so that recording never allocates.
final class SampleRecorder: @unchecked Sendable {
    private var storage: UnsafeMutableBufferPointer<UInt64>
    private(set) var count = 0
    /// Scratch state for the measured side (the start of the current round trip).
    var mark: UInt64 = 0
    /// Samples still to take before finishing, counting the warm-up.
    var remaining = 0
    /// Samples to drop first (warm-up).
    var warmup = 0
    var failure: String?
    /// Opened by the measured side when the last sample is in (or on failure).
    var done = Gate()

    init(capacity: Int) {
        storage = .allocate(capacity: max(capacity, 1))
    }

    deinit { storage.deallocate() }

    /// Prepares for `warmup` discarded and `samples` kept samples.
    func reset(warmup: Int, samples: Int) {
        if samples > storage.count {
            storage.deallocate()
            storage = .allocate(capacity: samples)
        }
        count = 0
        self.warmup = warmup
        remaining = warmup + samples
        failure = nil
        done = Gate()
    }

    /// Ends the measurement early with `message` (on the measured thread).
    func fail(_ message: String) {
        failure = message
        done.open()
    }

    /// Waits for the measured side, then returns the samples in microseconds
    /// or throws what went wrong.
    func waitForSamples(seconds: Double, what: String) throws -> [Double] {
        try done.wait(seconds: seconds, for: what)
        if let failure { throw BenchError(failure) }
        return microseconds()
    }

    /// Records one sample; returns true while more are wanted.
    @inline(__always)
    func record(_ nanoseconds: UInt64) -> Bool {
        if warmup > 0 {
            warmup -= 1
        } else {
            storage[count] = nanoseconds
            count += 1
        }
        remaining -= 1
        return remaining > 0
    }

    /// The kept samples, in microseconds.
    func microseconds() -> [Double] {
        (0..<count).map { Double(storage[$0]) / 1000 }
    }
}

/// A counter owned by one thread at a time (the loop thread that receives),
/// and the time the last expected event arrived.
final class ArrivalCounter: @unchecked Sendable {
    // @unchecked Sendable: written on the receiving thread only while the
    // measuring thread waits on `done`, read after it opened.
    var received = 0
    var expected = 0
    var lastArrival: UInt64 = 0
    var done = Gate()

    func reset(expecting count: Int) {
        received = 0
        expected = count
        lastArrival = 0
        done = Gate()
    }

    /// Counts one arrival; opens the gate at the last one.
    @inline(__always)
    func arrive() {
        received += 1
        if received == expected {
            lastArrival = monotonicNanoseconds()
            done.open()
        }
    }
}

/// Signed samples appended by one thread at a time (a loop thread's timer
/// blocks), read after that thread is done. Preallocated: appending never
/// allocates, and past capacity samples are counted but not kept.
final class LatenessLog: @unchecked Sendable {
    // @unchecked Sendable: appended on one loop thread; read by the measuring
    // thread after the loop thread has been synchronised with (performAndWait,
    // a thread join, or a stopped Foundation thread's gate).
    private let storage: UnsafeMutableBufferPointer<Double>
    private(set) var count = 0
    private(set) var overflow = 0

    init(capacity: Int) {
        storage = .allocate(capacity: max(capacity, 1))
    }

    deinit { storage.deallocate() }

    @inline(__always)
    func append(_ value: Double) {
        if count < storage.count {
            storage[count] = value
            count += 1
        } else {
            overflow += 1
        }
    }

    var samples: [Double] { Array(storage[0..<count]) }
}

/// The next fire a repeating timer is due for, kept by the timer's own block
/// (on the loop thread) to compute lateness.
final class FireSchedule: @unchecked Sendable {
    // @unchecked Sendable: used only on the thread whose loop fires the timer.
    var next: Double
    let interval: Double

    init(first: Double, interval: Double) {
        next = first
        self.interval = interval
    }

    /// Lateness of a fire at `now` (same unit as the schedule), and advance
    /// to the next fire date, skipping fires missed entirely (a late repeating
    /// timer keeps its schedule, S-TMR-2; CFRunLoopTimer does the same).
    @inline(__always)
    func fired(at now: Double) -> Double {
        let lateness = now - next
        next += interval
        while next + interval <= now { next += interval }
        return lateness
    }
}
