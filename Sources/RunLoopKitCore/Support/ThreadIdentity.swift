internal import CLinuxSupport
import Glibc

/// Who the calling thread is, as the kernel sees it.
package enum ThreadIdentity {
    /// The kernel thread id (what `ps -L`, `top -H` and gdb show).
    @inline(__always)
    package static var currentTID: Int32 { rlk_gettid() }

    /// True on the process's main thread (its tid is the pid).
    static var isMainThread: Bool { rlk_is_main_thread() != 0 }

    /// The calling thread's OS-level name.
    static var currentName: String {
        var buffer = [CChar](repeating: 0, count: 32)
        guard rlk_get_current_thread_name(&buffer, buffer.count) == 0 else { return "thread-\(currentTID)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The calling thread's name for diagnostics: its loop's name if it has
    /// a loop, else its OS-level name, read once per thread.
    package static var cachedName: String {
        if let loop = RunLoop.existingForCurrentThread { return loop.threadName }
        if let pointer = pthread_getspecific(nameKey) {
            // U-THREAD-NAME (docs/unsafe-sites.md).
            return Unmanaged<NameBox>.fromOpaque(pointer).takeUnretainedValue().name
        }
        let box = NameBox(currentName)
        pthread_setspecific(nameKey, Unmanaged.passRetained(box).toOpaque())
        return box.name
    }

    private final class NameBox {
        let name: String
        init(_ name: String) { self.name = name }
    }

    private static let nameKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            // U-THREAD-NAME (docs/unsafe-sites.md).
            if let pointer { Unmanaged<NameBox>.fromOpaque(pointer).release() }
        }
        return key
    }()

    /// Sets the calling thread's OS-level name. Linux keeps at most 15 bytes;
    /// the cut never splits a UTF-8 character.
    static func setCurrentName(_ name: String) {
        _ = rlk_set_current_thread_name(osName(for: name))
    }

    /// `name` cut to the 15 bytes Linux keeps, on a character boundary.
    static func osName(for name: String) -> String {
        var cut = ""
        for character in name {
            if cut.utf8.count + String(character).utf8.count > 15 { break }
            cut.append(character)
        }
        return cut
    }
}
