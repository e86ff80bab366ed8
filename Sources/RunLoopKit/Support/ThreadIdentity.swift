internal import CLinuxSupport
import Glibc

/// Who the calling thread is, as the kernel sees it.
enum ThreadIdentity {
    /// The kernel thread id (what `ps -L`, `top -H` and gdb show).
    @inline(__always)
    static var currentTID: Int32 { rlk_gettid() }

    /// True on the process's main thread (its tid is the pid).
    static var isMainThread: Bool { rlk_gettid() == getpid() }

    /// The calling thread's OS-level name.
    static var currentName: String {
        var buffer = [CChar](repeating: 0, count: 32)
        guard rlk_get_current_thread_name(&buffer, buffer.count) == 0 else { return "thread-\(currentTID)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

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
