/// A weak reference that an object keeps to itself and never reads, so that
/// LeakSanitizer can follow the object to its side table.
///
/// Once anything holds a weak reference to an object, Swift moves the
/// object's counts to a side table and keeps the table's address in the
/// object's header *encoded* (shifted, with flag bits), which LeakSanitizer
/// does not recognise as a pointer. While another weak reference exists,
/// that reference's storage (the table's address as it is) keeps the table
/// reachable; once the last one is gone, a side table whose object is alive
/// (the main loop, a send right the registry keeps, a thread's reply port)
/// is reported as a direct leak at exit. Suppressing those reports instead
/// would hide every leaked object that ever had a weak reference: a
/// suppressed table becomes a root, and it points to its object.
///
/// With this anchor the object's own storage holds the table's address, so
/// the table is reachable exactly as long as the object is, and a leaked
/// object is still reported, side table and all (docs/contributing.md,
/// "AddressSanitizer and leaks"). Cost: one word per object, and one weak
/// reference made in `init`; the objects that carry one (`RunLoop`, `Port`)
/// have side tables anyway, and neither is made per message.
package struct SideTableAnchor {
    /// The object itself; never read.
    private weak var object: AnyObject?

    /// An anchor that holds nothing yet.
    package init() {}

    /// Anchors `object`'s side table, making the table if there is none.
    /// Call it once, at the end of `object`'s `init`.
    package mutating func hold(_ object: AnyObject) { self.object = object }
}
