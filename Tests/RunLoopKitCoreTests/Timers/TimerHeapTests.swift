// The loop's timer heaps (S-TMR-1, S-TMR-2, S-TMR-3, S-TMR-5, S-TMR-7): a
// timer in several heaps keeps its own place in each, a heap finds the due
// timers and the wake-up as looking at every timer would, timers moved later
// or removed come out right, equal instants keep joining order, and the
// records kept out of line go with their timer. These run no loop and wait
// for nothing (they only build instants from the monotonic clock).
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Timer heaps (S-TMR-1, S-TMR-2, S-TMR-3, S-TMR-5)", .blocksThreads)
struct TimerHeapTests {
    @Test("S-TMR-1: a timer in the heaps of several modes (the common items and three common modes) keeps its own place in each: leaving one, and moving its date, leaves it where it is in the others")
    func timerInSeveralHeaps() throws {
        let base = MonotonicClock.now() + 1_000_000_000
        func timer(at milliseconds: UInt64) throws -> RunLoopKitCore.Timer {
            try RunLoopKitCore.Timer(fire: MonotonicClock.date(for: base + milliseconds * 1_000_000), interval: 0, repeats: false) { _ in }
        }
        // Four heaps, each with other members before the shared timer, so
        // that its place differs from heap to heap.
        var heaps = (1...4).map { TimerHeap(id: UInt32($0)) }
        var others: [RunLoopKitCore.Timer] = []
        for (index, _) in heaps.enumerated() {
            for step in 0..<index * 3 {
                let other = try timer(at: 100 + UInt64(step))
                let joined = heaps[index].insert(other)
                #expect(joined)
                others.append(other)
            }
        }
        let shared = try timer(at: 50)
        let joined = heaps.indices.map { heaps[$0].insert(shared) }
        #expect(joined == [true, true, true, true])
        #expect(TimerHeapPlaces.hasSpilledRecords(of: ObjectIdentifier(shared)), "two of its four records are kept out of line")
        #expect(heaps.allSatisfy { $0.contains(shared) && $0.earliest == shared.nextFireInstant })
        let again = heaps[2].insert(shared)
        #expect(!again, "a second insert of a member")

        // Out of the second heap only.
        let left = heaps[1].remove(shared)
        let leftAgain = heaps[1].remove(shared)
        #expect(left && !leftAgain && !heaps[1].contains(shared))
        #expect(heaps[1].settledEarliest() == others[0].nextFireInstant, "its first other member, 100 ms after the base")
        #expect([0, 2, 3].allSatisfy { heaps[$0].contains(shared) })

        // Moved later: each heap it is still in moves it, and finds it last.
        shared.fireDate = MonotonicClock.date(for: base + 200 * 1_000_000)
        for index in heaps.indices { heaps[index].reschedule(shared) }
        #expect(heaps[0].earliest == shared.nextFireInstant, "the first heap holds it alone")
        for index in [2, 3] {
            var due: [RunLoopKitCore.Timer] = []
            heaps[index].takeDue(now: base + 300 * 1_000_000, into: &due)
            #expect(due.last === shared && due.count == index * 3 + 1)
        }
        // It leaves the rest; the heaps keep their other members.
        let leftRest = [0, 2, 3].map { heaps[$0].remove(shared) }
        #expect(leftRest == [true, true, true])
        #expect(heaps.allSatisfy { !$0.contains(shared) })
        #expect(!TimerHeapPlaces.hasSpilledRecords(of: ObjectIdentifier(shared)), "its records out of line went with it")
        #expect(heaps.map(\.count) == [0, 3, 6, 9])

        // The common items' kind of heap keeps members in joining order
        // and no order by instant: nothing to fire from there.
        var common = TimerHeap(id: 5, ordersByInstant: false)
        let members = [shared] + others.prefix(4)
        let joinedCommon = members.map { common.insert($0) }
        #expect(joinedCommon.allSatisfy { $0 } && common.count == 5)
        #expect(common.earliest == MonotonicClock.never)
        var none: [RunLoopKitCore.Timer] = []
        common.takeDue(now: MonotonicClock.never - 1, into: &none)
        #expect(none.isEmpty)
        let leftCommon = common.remove(others[1])
        #expect(leftCommon && !common.contains(others[1]))
        #expect(common.timers.map(ObjectIdentifier.init) == [shared, others[0], others[2], others[3]].map(ObjectIdentifier.init))
        #expect(heaps[2].contains(others[3]), "its place in another heap stays")
        for other in others { other.invalidate() }
        shared.invalidate()
    }

    @Test("S-TMR-2, S-TMR-3: the loop's timer heap, after inserts, removals, inserts again and moved fire dates, finds the due timers earliest first (equal instants in joining order) and the same wake-up as looking at every timer")
    func heapMatchesLookingAtEveryTimer() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let base = MonotonicClock.now() + 1_000_000_000
            var timers = try (0..<200).map { _ in
                let timer = try RunLoopKitCore.Timer(
                    fire: MonotonicClock.date(for: base + UInt64.random(in: 0..<100, using: &generator) * 1_000_000),
                    interval: 1, repeats: true) { _ in }
                if Bool.random(using: &generator) { timer.tolerance = Double.random(in: 0..<0.05, using: &generator) }
                return timer
            }
            var heap = TimerHeap()
            let inserted = timers.map { heap.insert($0) }
            #expect(inserted.allSatisfy { $0 })
            let again = heap.insert(timers[0])
            #expect(!again, "a second insert of a member")
            // Remove a quarter, move a quarter (earlier and later).
            for _ in 0..<50 {
                let index = Int.random(in: 0..<timers.count, using: &generator)
                let removed = heap.remove(timers[index])
                #expect(removed)
                timers[index].invalidate()
                timers.remove(at: index)
            }
            // New members after removals take the removed ones' places in
            // the heap's bookkeeping: they must join last all the same.
            for _ in 0..<25 {
                let timer = try RunLoopKitCore.Timer(
                    fire: MonotonicClock.date(for: base + UInt64.random(in: 0..<100, using: &generator) * 1_000_000),
                    interval: 1, repeats: true) { _ in }
                let joined = heap.insert(timer)
                #expect(joined)
                timers.append(timer)
            }
            #expect(heap.timers.map(ObjectIdentifier.init) == timers.map(ObjectIdentifier.init), "members in joining order")
            for timer in timers.prefix(50) {
                timer.fireDate = MonotonicClock.date(for: base + UInt64.random(in: 0..<100, using: &generator) * 1_000_000)
                heap.reschedule(timer)
            }
            #expect(heap.count == timers.count)
            // Every timer's window, the slow way: the latest fire date within the earliest window's end.
            let deadline = timers.map(\.latestWakeInstant).min()!
            let expectedWake = timers.map(\.nextFireInstant).filter { $0 <= deadline }.max()!
            #expect(heap.settledEarliest() == timers.map(\.nextFireInstant).min()!)
            #expect(heap.wakeInstant() == expectedWake)
            // Half of them due: all of those, in fire order, and none of the others.
            let now = base + 50_000_000
            var due: [RunLoopKitCore.Timer] = []
            heap.takeDue(now: now, into: &due)
            let expectedDue = timers.filter { $0.nextFireInstant <= now }
            #expect(Set(due.map(ObjectIdentifier.init)) == Set(expectedDue.map(ObjectIdentifier.init)))
            #expect(due.map(\.nextFireInstant) == due.map(\.nextFireInstant).sorted())
            // Equal instants come out in joining order (the timers array's order, among survivors).
            for (first, second) in zip(due, due.dropFirst()) where first.nextFireInstant == second.nextFireInstant {
                #expect(timers.firstIndex { $0 === first }! < timers.firstIndex { $0 === second }!)
            }
            #expect(heap.earliest > now)
            // Taken out, they go back with reinsert; members all the same.
            #expect(heap.count == timers.count)
            for timer in due { heap.reinsert(timer) }
            #expect(heap.settledEarliest() == timers.map(\.nextFireInstant).min()!)
            for timer in timers { timer.invalidate() }
        }
    }

    @Test("S-TMR-2, S-TMR-5, S-TMR-7: the timer heap leaves a timer moved later where it was until it comes to the top: among removals and ties it comes out at its new date and not its old, removed timers never come out, equal instants keep joining order")
    func heapMovesLaterTimersLate() throws {
        var generator = SystemRandomNumberGenerator()
        let base = MonotonicClock.now() + 1_000_000_000
        func timer(at milliseconds: UInt64) throws -> RunLoopKitCore.Timer {
            try RunLoopKitCore.Timer(fire: MonotonicClock.date(for: base + milliseconds * 1_000_000), interval: 0, repeats: false) { _ in }
        }
        var heap = TimerHeap()
        // Ten instants only, so that many entries tie and order decides.
        var members = try (0..<2_000).map { _ in try timer(at: UInt64.random(in: 0..<10, using: &generator)) }
        for member in members { _ = heap.insert(member) }
        var removed: [RunLoopKitCore.Timer] = []
        var moved = Set<ObjectIdentifier>()
        for round in 0..<1_800 {
            let index = Int.random(in: 0..<members.count, using: &generator)
            if round % 3 == 2 {
                // Later, as Timer.fireDate's setter leaves it: no reschedule.
                members[index].fireDate = MonotonicClock.date(for: base + (20 + UInt64.random(in: 0..<10, using: &generator)) * 1_000_000)
                moved.insert(ObjectIdentifier(members[index]))
            } else {
                let gone = members.remove(at: index)
                let left = heap.remove(gone)
                #expect(left)
                removed.append(gone)
                moved.remove(ObjectIdentifier(gone))
            }
        }
        #expect(heap.count == members.count && !moved.isEmpty)
        // The top is a moved timer's old instant until settled.
        let settled = heap.settledEarliest()
        #expect(settled == members.map(\.nextFireInstant).min())
        // Due at the old dates: only members not moved, in (instant, joining) order.
        var due: [RunLoopKitCore.Timer] = []
        heap.takeDue(now: base + 15 * 1_000_000, into: &due)
        let gone = Set(removed.map(ObjectIdentifier.init))
        #expect(!due.contains { gone.contains(ObjectIdentifier($0)) }, "a removed timer came out")
        #expect(!due.contains { moved.contains(ObjectIdentifier($0)) }, "a timer moved later came out at its old date")
        let expected = members.filter { !moved.contains(ObjectIdentifier($0)) }
        #expect(due.map(ObjectIdentifier.init) == expected.sorted { $0.nextFireInstant < $1.nextFireInstant }.map(ObjectIdentifier.init),
                "by instant, equal instants in joining order (a stable sort of the members in joining order)")
        // The moved ones at their new dates, never before, in fire order.
        #expect(heap.settledEarliest() == members.filter { moved.contains(ObjectIdentifier($0)) }.map(\.nextFireInstant).min())
        var early: [RunLoopKitCore.Timer] = []
        // (A date is a Double of seconds: its instant may round by a tenth of a microsecond.)
        heap.takeDue(now: base + 19 * 1_000_000, into: &early)
        #expect(early.isEmpty, "a timer moved later came out before its new date")
        var later: [RunLoopKitCore.Timer] = []
        heap.takeDue(now: base + 40 * 1_000_000, into: &later)
        #expect(Set(later.map(ObjectIdentifier.init)) == moved)
        #expect(later.map(\.nextFireInstant) == later.map(\.nextFireInstant).sorted())
        #expect(heap.settledEarliest() == MonotonicClock.never)
        for timer in members + removed { timer.invalidate() }
    }

    @Test("S-TMR-1: a timer in the common items and two common modes keeps its common items' record out of line and its modes' inline, where every sift rewrites them; each heap still finds it")
    func commonItemsRecordGoesOutOfLineFirst() throws {
        let base = MonotonicClock.now() + 1_000_000_000
        func timer(at milliseconds: UInt64) throws -> RunLoopKitCore.Timer {
            try RunLoopKitCore.Timer(fire: MonotonicClock.date(for: base + milliseconds * 1_000_000), interval: 0, repeats: false) { _ in }
        }
        var common = TimerHeap(id: 1, ordersByInstant: false)
        var modes = [TimerHeap(id: 2), TimerHeap(id: 3)]
        let shared = try timer(at: 50)
        let identity = ObjectIdentifier(shared)
        // Joined as the loop joins a common-modes timer: the common items first.
        let joinedCommon = common.insert(shared)
        let joinedFirst = modes[0].insert(shared)
        #expect(joinedCommon && joinedFirst)
        #expect(!TimerHeapPlaces.hasSpilledRecords(of: identity), "two records fit inline")
        let joinedSecond = modes[1].insert(shared)
        #expect(joinedSecond)
        #expect(TimerHeapPlaces.hasSpilledRecords(of: identity), "the third record went out of line")
        // Others sifted past it in both modes: its places there change at each swap.
        let others = try (0..<20).map { try timer(at: UInt64($0)) }
        for other in others {
            let joined = [modes[0].insert(other), modes[1].insert(other)]
            #expect(joined == [true, true])
        }
        // Leaving the common items empties the table: theirs was the record out of line.
        let leftCommon = common.remove(shared)
        #expect(leftCommon)
        #expect(!TimerHeapPlaces.hasSpilledRecords(of: identity), "the common items' record was the one kept out of line")
        for index in modes.indices {
            #expect(modes[index].contains(shared))
            var due: [RunLoopKitCore.Timer] = []
            modes[index].takeDue(now: base + 60 * 1_000_000, into: &due)
            #expect(due.count == 21 && due.last === shared, "every timer due, the shared one last")
            let left = modes[index].remove(shared)
            #expect(left, "a member taken out to fire leaves from outside the heap")
            #expect(!modes[index].contains(shared) && modes[index].count == 20)
        }
        for other in others { other.invalidate() }
        shared.invalidate()
    }

    @Test("S-TMR-1: a timer in three heaps that is freed without leaving them (its loop torn down) takes its records kept out of line with it")
    func spilledSlotsGoWithTheTimer() throws {
        var heaps = (1...3).map { TimerHeap(id: UInt32($0)) }
        var timer: RunLoopKitCore.Timer? = try RunLoopKitCore.Timer(
            fire: MonotonicClock.date(for: MonotonicClock.now() + 1_000_000_000), interval: 0, repeats: false) { _ in }
        let identity = ObjectIdentifier(timer!)
        for index in heaps.indices { _ = heaps[index].insert(timer!) }
        #expect(TimerHeapPlaces.hasSpilledRecords(of: identity))
        // The heaps go first, as a torn-down loop's do, then the last reference.
        heaps = []
        timer = nil
        #expect(!TimerHeapPlaces.hasSpilledRecords(of: identity))
    }

    @Test("S-TMR-7: joining orders numbered again at the end of their range keep equal instants in joining order")
    func heapRenumbersOrders() throws {
        let instant = MonotonicClock.now() + 1_000_000_000
        var heap = TimerHeap(firstOrder: .max - 3)
        let timers = try (0..<10).map { _ in
            try RunLoopKitCore.Timer(fire: MonotonicClock.date(for: instant), interval: 0, repeats: false) { _ in }
        }
        for timer in timers.prefix(6) { _ = heap.insert(timer) }
        _ = heap.remove(timers[1])
        for timer in timers.dropFirst(6) { _ = heap.insert(timer) }
        #expect(heap.timers.map(ObjectIdentifier.init) == timers.enumerated().filter { $0.offset != 1 }.map { ObjectIdentifier($0.element) })
        // Dates become instants through the wall clock: they may differ
        // by a nanosecond, so the expected order is a stable sort by
        // instant of the joining order.
        var due: [RunLoopKitCore.Timer] = []
        heap.takeDue(now: instant + 1_000_000, into: &due)
        let members = timers.enumerated().filter { $0.offset != 1 }.map(\.element)
        #expect(due.map(ObjectIdentifier.init) == members.sorted { $0.nextFireInstant < $1.nextFireInstant }.map(ObjectIdentifier.init))
        for timer in timers { timer.invalidate() }
    }
}
