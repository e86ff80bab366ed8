/// Something a mode holds: a custom source (Source0), a socket source
/// (Source1), a timer or an observer. `RunLoop` adds, removes, finds and
/// tears down every kind through this one protocol
/// (RunLoop+Registration.swift); what differs between kinds is here.
protocol ModeItem: AnyObject, Sendable {
    /// What can go wrong when the item joins a mode: `Never` for every kind
    /// but socket sources, whose fd epoll may refuse.
    associatedtype JoinError: Error

    /// The kind's name in diagnostics ("timer", "observer", ...).
    static var kindName: String { get }
    /// Where a mode keeps items of this kind.
    static var list: WritableKeyPath<ModeState, [Self]> { get }

    /// Items with an order are kept by ascending order, then insertion;
    /// nil keeps insertion order alone.
    var sortOrder: Int? { get }
    var isValid: Bool { get }
    /// The one loop the item belongs to, for kinds that belong to one loop
    /// at a time (all but custom sources, which may be in several).
    var loopBinding: LoopBinding? { get }

    /// Under the loop's lock, right after the item joined `mode`'s list.
    func joinedLocked(_ mode: RunLoop.Mode, _ state: inout LoopState, waiter: LoopWaiter) throws(JoinError)
    /// Under the loop's lock, right after the item left `mode`'s list.
    func leftLocked(_ mode: RunLoop.Mode, _ state: inout LoopState)
    /// Under the loop's lock, once the item is in none of the loop's modes.
    func forgottenLocked(_ state: inout LoopState)
    /// After the lock is released: the item's own callouts (a custom
    /// source's `schedule`), never under a lock (docs/design.md, "Locks and user code").
    func didJoin(_ loop: RunLoop, mode: RunLoop.Mode)
    /// After the lock is released, for each mode the item left.
    func didLeave(_ loop: RunLoop, mode: RunLoop.Mode, leftLoop: Bool)
    /// The loop's thread exited while the item was in `mode` (S-THR-3).
    func loopDidTearDown(_ loop: RunLoop, mode: RunLoop.Mode)
}

extension ModeItem {
    var sortOrder: Int? { nil }
    var loopBinding: LoopBinding? { nil }
    func leftLocked(_ mode: RunLoop.Mode, _ state: inout LoopState) {}
    func forgottenLocked(_ state: inout LoopState) {}
    func didJoin(_ loop: RunLoop, mode: RunLoop.Mode) {}
    func didLeave(_ loop: RunLoop, mode: RunLoop.Mode, leftLoop: Bool) {}
}

extension ModeItem where JoinError == Never {
    func joinedLocked(_ mode: RunLoop.Mode, _ state: inout LoopState, waiter: LoopWaiter) {}
}
