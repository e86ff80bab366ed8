/// A weak reference to a loop, for whatever must find a loop without
/// keeping it alive (a custom source's loops, a test clock's, a binding).
package struct WeakLoop {
    package weak var loop: RunLoop?
    package init(_ loop: RunLoop?) { self.loop = loop }
}
