/// A weak reference held in a constant: what a long-lived callout closure
/// captures instead of `[weak self]`. A weak capture is a variable of the
/// closure's, so each call reads it under a dynamic exclusivity check
/// (about 80 instructions); a captured constant is read without one:
/// `{ [port = WeakCapture(self)] in port.object?.deliver() }`.
package struct WeakCapture<Object: AnyObject>: @unchecked Sendable {
    // @unchecked Sendable: a weak reference is loaded atomically; the
    // object's own Sendable-ness is the caller's to keep.
    package weak var object: Object?
    @inlinable package init(_ object: Object) { self.object = object }
}
