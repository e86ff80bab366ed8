import Synchronization

/// The loop's list of socket sources that may have input, in arrival
/// order, so that step 6 of S-RUN-2 ("a Source1 is already ready") is
/// answered without a system call (docs/design.md, "Sleeping and waking"). Loop thread only.
///
/// Membership is a mark on the source (its `readyMark`), not a set: the
/// loop asks it on every socket event. The mark is this list's `id`, unique
/// in the process, because a source can move to another loop while its old
/// loop still holds a stale entry: each list sets and clears only its own.
struct ReadyList {
    private var queue = ReadyQueue()
    /// What this list writes in `SocketSource.readyMark`; never 0.
    let id: UInt64 = ReadyList.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
    private static let nextID = Atomic<UInt64>(1)

    /// Queues `source` unless it is queued already. `confirmed`: input was
    /// seen (ZMQ_EVENTS, a read-ahead), so the next look needs no check.
    mutating func append(_ source: SocketSource, confirmed: Bool = false) {
        guard source.readyMark.load(ordering: .relaxed) != id else { return }
        source.readyMark.store(id, ordering: .relaxed)
        queue.append(source, confirmed: confirmed)
    }

    /// Step 6: is a socket source of this mode ready now? Sockets that can
    /// send are looked at first, since a send outside their handler may
    /// have consumed their readiness edge.
    mutating func hasReadySource(_ snapshot: ModeSnapshot, of loop: RunLoop) -> Bool {
        for source in snapshot.socketsToCheckBeforeSleeping
        where source.readyMark.load(ordering: .relaxed) != id && source.isValid && source.hasInput() {
            append(source, confirmed: true)
        }
        return firstReadyIndex(snapshot, of: loop) != nil
    }

    /// Step 9: takes the first ready source of this mode for one socket
    /// event (S-SRC1-1). A socket goes to the back of the list before its
    /// handler runs, so that a busy socket cannot starve the others and a
    /// nested run inside the handler finds it there; it is looked at again
    /// before the loop sleeps.
    mutating func takeNext(_ snapshot: ModeSnapshot, of loop: RunLoop) -> SocketSource? {
        guard let index = firstReadyIndex(snapshot, of: loop) else { return nil }
        if index == queue.count - 1 {
            // At the back already, where it would go (a port alone on the
            // list, the common case): no removal and append.
            let source = queue.source(at: index)
            if source.isSocket && source.isValid {
                queue.unconfirm(at: index)
                return source
            }
        }
        let source = queue.remove(at: index)
        if source.isSocket && source.isValid {
            queue.append(source, confirmed: false)  // its mark stays set
        } else {
            forget(source)
        }
        return source
    }

    /// Takes off the list a source that just found its queue empty (put
    /// back at the end before its callout); it returns when epoll reports
    /// new input. Looks from the back, where it normally is.
    mutating func forgetDrained(_ source: SocketSource) {
        guard source.readyMark.load(ordering: .relaxed) == id else { return }
        var index = queue.count - 1
        while index >= 0 {
            if queue.holds(source, at: index) {
                removeAndForget(at: index)
                return
            }
            index -= 1
        }
    }

    /// Empties the list (teardown).
    mutating func removeAll() {
        while !queue.isEmpty { removeAndForget(at: 0) }
    }

    /// The first source on the list that is in this mode and has input.
    /// Entries without input leave the list; entries of other modes stay
    /// for when the loop runs one of theirs (S-SRC1-2), unless their source
    /// has left this loop.
    private mutating func firstReadyIndex(_ snapshot: ModeSnapshot, of loop: RunLoop) -> Int? {
        var index = 0
        while index < queue.count {
            let source = queue.source(at: index)
            if !source.isValid {
                removeAndForget(at: index)
                continue
            }
            guard snapshot.contains(source) else {
                if source.binding.loop !== loop {
                    removeAndForget(at: index)
                } else {
                    index += 1
                }
                continue
            }
            if queue.isConfirmed(at: index) || source.hasInput() {
                queue.confirm(at: index)
                return index
            }
            removeAndForget(at: index)
        }
        return nil
    }

    /// Takes entry `index` off the queue and clears its mark. Two steps,
    /// not `forget(queue.remove(at:))`: that form borrows a copy of the
    /// whole list for the call while `remove` mutates it, so the queue's
    /// storage was shared and copied on write on every removal.
    private mutating func removeAndForget(at index: Int) {
        let source = queue.remove(at: index)
        forget(source)
    }

    /// Clears this list's mark on a source taken off it; a mark another
    /// loop has set since (the source moved) is left alone.
    private func forget(_ source: SocketSource) {
        _ = source.readyMark.compareExchange(expected: id, desired: 0, ordering: .relaxed)
    }
}
