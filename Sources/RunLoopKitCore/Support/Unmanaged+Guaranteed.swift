// U-GUARANTEED-REF (docs/unsafe-sites.md).
extension Unmanaged {
    /// Calls `body` with the instance as a guaranteed reference, without a
    /// retain or a release: for an instance the caller knows stays alive for
    /// the call (a port's send channel, a channel's socket under its lock, a
    /// batch's in-place message). For the message path, where a counted copy
    /// would add a retain and a release to every message. What the standard library's
    /// `_withUnsafeGuaranteedRef` does, keeping `body`'s typed error.
    ///
    /// `package` and inlinable: the ports' send and delivery paths call it
    /// per message.
    @inlinable @inline(__always)
    package func withGuaranteedReference<Result, Failure: Error>(
        _ body: (Instance) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        do {
            // Untyped in between: `_withUnsafeGuaranteedRef` only rethrows
            // (and the compiler crashed on a typed closure passed to it).
            // U-GUARANTEED-REF (docs/unsafe-sites.md).
            return try _withUnsafeGuaranteedRef { (instance) throws -> Result in try body(instance) }
        } catch {
            throw error as! Failure
        }
    }
}
