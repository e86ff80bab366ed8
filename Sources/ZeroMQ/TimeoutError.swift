/// A wait that ran out of time: what was waited for, and for how long. One
/// of the causes that RunLoopKit's errors share (`RunLoopError.timedOut`,
/// `PortError.timedOut`), defined once here and re-exported by RunLoopKit.
///
/// Thread rules: a plain value; `Sendable`, usable on any thread.
public struct TimeoutError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What timed out, such as "a block on the run loop of 'worker'" or
    /// "send to port 7".
    public let operation: String
    /// How long it was given, when the caller gave a length rather than a date.
    public let limit: Duration?

    /// A timeout of `operation` after `limit`.
    public init(operation: String, limit: Duration? = nil) {
        self.operation = operation
        self.limit = limit
    }

    /// `"<operation> timed out"`, with the limit when there is one.
    public var description: String {
        guard let limit else { return "\(operation) timed out" }
        return "\(operation) timed out after \(limit.formatted())"
    }
}

extension Duration {
    /// Seconds with up to 3 decimals ("0.05 s", "30 s"), for messages.
    fileprivate func formatted() -> String {
        let seconds = Double(components.seconds) + Double(components.attoseconds) / 1e18
        let rounded = (seconds * 1000).rounded() / 1000
        return rounded == rounded.rounded() ? "\(Int(rounded)) s" : "\(rounded) s"
    }
}
