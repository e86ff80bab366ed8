extension RunLoop {
    /// Where a queued block came from, so that a monitor can name the block
    /// that blocked a loop: the `tag` given to `perform` (nil if none) and
    /// the file and line of the `perform` call that queued it (captured with
    /// `#fileID` and `#line` when the block was queued).
    ///
    /// ```swift
    /// try worker.perform(tag: "parse") { parse(document) }
    /// // a monitor's report of it: origin?.description == "tag 'parse' (main.swift:42)"
    /// ```
    ///
    /// Threading: an immutable value; any thread may read it. The loop makes
    /// it on its own thread only when a monitor is set, so queuing a block
    /// builds no string while no monitor listens.
    public struct CalloutOrigin: Sendable, Hashable, CustomStringConvertible {
        /// The tag passed to `perform(tag:)`, `perform(afterDelay:tag:)` and
        /// the like; nil when the call gave none.
        public let tag: String?
        /// The `#fileID` of the call that queued the block: the module and
        /// the file name, as in "MyApp/Parser.swift".
        public let file: String
        /// The line of that call.
        public let line: UInt

        /// The file name without its module, and the line: "Parser.swift:42".
        public var location: String {
            let name = file.split(separator: "/").last.map(String.init) ?? file
            return "\(name):\(line)"
        }

        /// "tag 'parse' (Parser.swift:42)" with a tag, "Parser.swift:42" without.
        public var description: String {
            guard let tag else { return location }
            return "tag '\(tag)' (\(location))"
        }
    }
}
