extension RunLoop {
    /// A run-loop mode: a named set of sources, timers and observers
    /// (CFRunLoopMode). Modes are created on first use and never removed.
    ///
    /// `common` is not a mode but the set of modes marked common; the default
    /// mode is always in it (S-MODE-3). Running the loop in `common` is
    /// invalid (S-MODE-4).
    public struct Mode: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
        /// The mode's name; modes with equal names are the same mode.
        public let rawValue: String

        /// The mode named `rawValue` (made in a loop on first use, S-MODE-1).
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The mode named `rawValue`: `RunLoop.Mode("com.example.tracking")`.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        /// The mode named by a string literal.
        public init(stringLiteral value: String) { self.rawValue = value }

        /// The mode a loop runs in unless told otherwise (kCFRunLoopDefaultMode).
        public static let `default` = Mode(rawValue: "kCFRunLoopDefaultMode")
        /// The common modes pseudo-mode (kCFRunLoopCommonModes).
        public static let common = Mode(rawValue: "kCFRunLoopCommonModes")

        /// The mode's name.
        public var description: String { rawValue }
    }
}
