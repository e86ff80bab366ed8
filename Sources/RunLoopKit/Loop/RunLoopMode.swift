extension RunLoop {
    /// A run-loop mode: a named set of sources, timers and observers
    /// (CFRunLoopMode). Modes are created on first use and never removed.
    ///
    /// `common` is not a mode but the set of modes marked common; the default
    /// mode is always in it (S-MODE-3). Running the loop in `common` is
    /// invalid (S-MODE-4).
    public struct Mode: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        public let rawValue: String

        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public init(stringLiteral value: String) { self.rawValue = value }

        /// The mode a loop runs in unless told otherwise (kCFRunLoopDefaultMode).
        public static let `default` = Mode(rawValue: "kCFRunLoopDefaultMode")
        /// The common modes pseudo-mode (kCFRunLoopCommonModes).
        public static let common = Mode(rawValue: "kCFRunLoopCommonModes")

        public var description: String { rawValue }
    }
}
