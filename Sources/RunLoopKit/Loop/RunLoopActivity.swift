extension RunLoop {
    /// The points in a run at which observers are told (CFRunLoopActivity),
    /// in the order of S-RUN-2.
    public struct Activity: OptionSet, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }

        public static let entry = Activity(rawValue: 1 << 0)
        public static let beforeTimers = Activity(rawValue: 1 << 1)
        public static let beforeSources = Activity(rawValue: 1 << 2)
        public static let beforeWaiting = Activity(rawValue: 1 << 5)
        public static let afterWaiting = Activity(rawValue: 1 << 6)
        public static let exit = Activity(rawValue: 1 << 7)
        public static let allActivities = Activity(rawValue: 0x0FFF_FFFF)

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
