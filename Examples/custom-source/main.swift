// custom-source: a custom input source (Source0), as Apple's threading guide describes it.
//
// In the classic example, a thread adds a CFRunLoopSource to its loop and runs it with
// CFRunLoopRunInMode(kCFRunLoopDefaultMode, 9999999, YES); two seconds later
// another thread checks CFRunLoopIsWaiting, calls CFRunLoopSourceSignal and
// CFRunLoopWakeUp; the source's perform runs on the loop's thread and the run
// returns after that one source. Here the main thread owns the loop and a
// LoopThread named "signaller" plays the other thread (S-SRC0-1, S-SRC0-2).
//
//   swift run custom-source
import Glibc
import RunLoopKit
import Synchronization

let loop = RunLoop.main
let performs = Atomic<Int>(0)

let source = CustomSource(
    order: 0,
    schedule: { loop, mode in print("schedule: source added to \(mode) of the loop of thread '\(loop.threadName)'") },
    cancel: { loop, mode in print("cancel:   source removed from \(mode) of the loop of thread '\(loop.threadName)'") },
    perform: {
        performs.add(1, ordering: .relaxed)
        print("perform:  handling the event on thread '\(RunLoop.current.threadName)'")
    }
)
loop.add(source, forMode: .default)
// Also in a mode outside the common modes, to show at the end that a mode
// with nothing in it finishes a run at once (S-RUN-1).
let quiet = RunLoop.Mode("quiet")
loop.add(source, forMode: quiet)

let signaller = LoopThread(name: "signaller")
try signaller.start()

print("\n== round 1: signal, then wake up (CFRunLoopSourceSignal + CFRunLoopWakeUp)")
try signaller.perform {
    usleep(300_000)  // the classic example waits 2 s (dispatch_after)
    if loop.isWaiting {
        print("signaller: the loop is waiting for input")
    } else {
        print("signaller: the loop is busy handling an event")
    }
    source.signal()
    usleep(200_000)
    print("signaller: signalled 200 ms ago; perform has run \(performs.load(ordering: .relaxed)) times, loop still asleep: \(loop.isWaiting)")
    print("signaller: a signal does not wake the loop; wakeUp() does")
    loop.wakeUp()
}
print("main:     run(mode: .default, seconds: 9_999_999, returnAfterSourceHandled: true)")
var result = loop.run(mode: .default, seconds: 9_999_999, returnAfterSourceHandled: true)
print("main:     run returned .\(result) after \(performs.load(ordering: .relaxed)) perform")

print("\n== round 2: three signals before it fires make one perform; signalAndWakeUp() does both steps")
try signaller.perform {
    usleep(100_000)
    print("signaller: signal(), signal(), signalAndWakeUp()")
    source.signal()
    source.signal()
    source.signalAndWakeUp()
}
result = loop.run(mode: .default, seconds: 9_999_999, returnAfterSourceHandled: true)
print("main:     run returned .\(result); performs so far: \(performs.load(ordering: .relaxed))")
result = loop.run(mode: .default, seconds: 0)  // polls: one pass without sleeping (S-RUN-3)
print("main:     still signalled: \(source.isSignalled); a polling run returned .\(result), performs: \(performs.load(ordering: .relaxed))")

print("\n== done")
signaller.stop()
source.invalidate()  // removes it from every mode of every loop, calling cancel (S-SRC0-3)
print("source is valid: \(source.isValid); still in .default: \(loop.contains(source, inMode: .default))")
// The mode outside the common modes is empty now: a run finishes at once.
print("a run of 'quiet', now empty: .\(loop.run(mode: quiet, seconds: 1))")
// The main thread's .default is a common mode, which stands for
// DispatchQueue.main there (S-EXEC-3, S-RUN-1), as on Apple's systems: it
// is never empty, so a poll runs and times out instead.
print("a poll of the main loop's .default: .\(loop.run(mode: .default, seconds: 0)) (it serves DispatchQueue.main)")
