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
    /// Adds `item` to where `mode` keeps its kind; false if it was there.
    static func insert(_ item: Self, into mode: inout ModeState) -> Bool
    /// Removes `item` from `mode`; false if it was not there.
    static func remove(_ item: Self, from mode: inout ModeState) -> Bool
    /// Whether `mode` holds `item`.
    static func isHeld(_ item: Self, by mode: ModeState) -> Bool
    /// Every item of the kind that `mode` holds.
    static func all(in mode: ModeState) -> [Self]

    /// Whether the kind acts on the modes it joined or left, after the
    /// fact (`leftLocked`, `didJoin`, `didLeave`): false lets a change skip
    /// listing the modes (an allocation). A kind whose joining can fail
    /// must say true: the list is what a failed join undoes.
    static var observesModeChanges: Bool { get }
    /// Whether the loop's snapshot of `mode` (ModeSnapshot, what a run
    /// re-reads when the item version moves) is out of date after an item
    /// of this kind joined or left it. A snapshot lists every kind but
    /// timers, of which it keeps only whether there are any: a timer's
    /// change outdates it only when the mode's timers become none or some.
    static func outdatesSnapshot(of mode: borrowing ModeState) -> Bool

    /// Items with an order are kept by ascending order, then insertion;
    /// nil keeps insertion order alone.
    var sortOrder: Int? { get }
    var isValid: Bool { get }
    /// Binds the item to `loop` as it joins one of its modes: false if it
    /// belongs to another live loop. Kinds that belong to one loop at a
    /// time (all but custom sources, which may be in several) keep a
    /// `LoopBinding`; the others always answer true.
    func bind(to loop: RunLoop) -> Bool
    /// Forgets the loop the item was bound to, once it is in none of its modes.
    func unbind()

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
    static var observesModeChanges: Bool { true }
    static func outdatesSnapshot(of mode: borrowing ModeState) -> Bool { true }
    var sortOrder: Int? { nil }
    func bind(to loop: RunLoop) -> Bool { true }
    func unbind() {}
    func leftLocked(_ mode: RunLoop.Mode, _ state: inout LoopState) {}
    func forgottenLocked(_ state: inout LoopState) {}
    func didJoin(_ loop: RunLoop, mode: RunLoop.Mode) {}
    func didLeave(_ loop: RunLoop, mode: RunLoop.Mode, leftLoop: Bool) {}
}

extension ModeItem where JoinError == Never {
    func joinedLocked(_ mode: RunLoop.Mode, _ state: inout LoopState, waiter: LoopWaiter) {}
}

/// A kind a mode keeps in an array (sources and observers; timers are kept
/// in a heap, `TimerHeap`).
protocol ListedModeItem: ModeItem {
    /// Where a mode keeps items of this kind.
    static var list: WritableKeyPath<ModeState, [Self]> { get }
}

extension ListedModeItem {
    /// Adds `item` to its list, keeping `sortOrder` ascending and insertion
    /// order among equals; false if it was there already.
    static func insert(_ item: Self, into mode: inout ModeState) -> Bool {
        if mode[keyPath: list].contains(where: { $0 === item }) { return false }
        if let key = item.sortOrder {
            let index = mode[keyPath: list].firstIndex { ($0.sortOrder ?? .min) > key } ?? mode[keyPath: list].endIndex
            mode[keyPath: list].insert(item, at: index)
        } else {
            mode[keyPath: list].append(item)
        }
        return true
    }

    static func remove(_ item: Self, from mode: inout ModeState) -> Bool {
        guard let index = mode[keyPath: list].firstIndex(where: { $0 === item }) else { return false }
        mode[keyPath: list].remove(at: index)
        return true
    }

    static func isHeld(_ item: Self, by mode: ModeState) -> Bool { mode[keyPath: list].contains { $0 === item } }

    static func all(in mode: ModeState) -> [Self] { mode[keyPath: list] }
}
