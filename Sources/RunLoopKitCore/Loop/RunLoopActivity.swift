extension RunLoop {
    /// The points in a run at which observers are told (CFRunLoopActivity),
    /// in the order of S-RUN-2.
    public struct Activity: OptionSet, Hashable, Sendable, CustomStringConvertible {
        /// The activity bits, with CFRunLoopActivity's values.
        public let rawValue: UInt32
        /// An activity set from CFRunLoopActivity bits.
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        /// The run begins (kCFRunLoopEntry): told once per run, before anything else.
        public static let entry = Activity(rawValue: 1 << 0)
        /// A pass is about to fire timers (kCFRunLoopBeforeTimers), step 2 of S-RUN-2.
        public static let beforeTimers = Activity(rawValue: 1 << 1)
        /// A pass is about to perform sources (kCFRunLoopBeforeSources), step 3.
        public static let beforeSources = Activity(rawValue: 1 << 2)
        /// The loop is about to sleep (kCFRunLoopBeforeWaiting), step 7: skipped when it will not sleep.
        public static let beforeWaiting = Activity(rawValue: 1 << 5)
        /// The loop woke from its sleep (kCFRunLoopAfterWaiting), end of step 8; always paired with `beforeWaiting`.
        public static let afterWaiting = Activity(rawValue: 1 << 6)
        /// The run ends (kCFRunLoopExit): told once per run that was entered.
        public static let exit = Activity(rawValue: 1 << 7)
        /// Every activity (kCFRunLoopAllActivities).
        public static let allActivities = Activity(rawValue: 0x0FFF_FFFF)

        /// The activity's name (`entry`, ...), or a bracketed list for several.
        public var description: String {
            let names: [(Activity, String)] = [
                (.entry, "entry"), (.beforeTimers, "beforeTimers"), (.beforeSources, "beforeSources"),
                (.beforeWaiting, "beforeWaiting"), (.afterWaiting, "afterWaiting"), (.exit, "exit"),
            ]
            let present = names.filter { contains($0.0) }.map(\.1)
            return present.count == 1 ? present[0] : "[" + present.joined(separator: ", ") + "]"
        }
    }
}
