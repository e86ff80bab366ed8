/// A loop's modes by name, made on first use and kept until the loop is torn
/// down (S-MODE-1), in the order they were made.
///
/// A program uses a handful of modes, so a mode is found by comparing its
/// name with theirs, one after the other: names made from one string (the
/// usual case: `.default`, or a `Mode` kept in a constant) compare by their
/// storage alone, and no name is hashed: a dictionary would hash a name
/// several times in every pass that fires a timer (docs/performance.md,
/// "Timers"). Past `scanLimit` modes an index by name takes over.
struct ModeTable {
    /// Every mode's state, in the order the modes were made.
    private(set) var states: [ModeState] = []
    /// Each mode's place in `states`, kept once there are more than
    /// `scanLimit` modes.
    private var placeByName: [RunLoop.Mode: Int] = [:]

    /// The most modes looked up by comparing names.
    static let scanLimit = 8

    /// The modes' names, in the order they were made.
    var names: [RunLoop.Mode] { states.map(\.mode) }

    /// The place of `mode` in `states`, if it was made.
    @inline(__always)
    func place(of mode: RunLoop.Mode) -> Int? {
        guard states.count <= Self.scanLimit else { return placeByName[mode] }
        var place = 0
        while place < states.count {
            if states[place].mode == mode { return place }
            place += 1
        }
        return nil
    }

    /// Makes the state of `mode`, which is not in the table yet, and returns
    /// its place.
    mutating func append(_ state: ModeState) -> Int {
        states.append(state)
        if states.count > Self.scanLimit {
            if placeByName.isEmpty {
                for (place, state) in states.enumerated() { placeByName[state.mode] = place }
            } else {
                placeByName[state.mode] = states.count - 1
            }
        }
        return states.count - 1
    }

    /// Applies `body` to the state at `place`, in place.
    @inline(__always)
    mutating func withState<T, E: Error>(at place: Int, _ body: (inout ModeState) throws(E) -> T) throws(E) -> T {
        try body(&states[place])
    }

    /// Reads the state of `mode` without copying it; nil if the mode was
    /// never used.
    @inline(__always)
    func read<T>(_ mode: RunLoop.Mode, _ body: (borrowing ModeState) -> T) -> T? {
        guard let place = place(of: mode) else { return nil }
        return body(states[place])
    }

    mutating func removeAll() {
        states.removeAll()
        placeByName.removeAll()
    }
}
