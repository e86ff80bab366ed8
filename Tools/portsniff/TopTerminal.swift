import ArgumentParser
import Glibc
import RunLoopKit

/// The terminal of `portsniff --top`, used as htop uses it: the alternate
/// screen (the shell's screen comes back untouched), the cursor hidden, and
/// keys read as they are pressed, without echo (termios: no ICANON, no ECHO;
/// ISIG stays on, so Ctrl-C is still SIGINT and quits the usual way).
///
/// All of it is undone by `leave()`, which the sniffer calls before its
/// summary (on q, Ctrl-C, SIGTERM, or when the program run after `--`
/// exits), and by an `atexit` handler should the process exit another way.
/// Ctrl-Z (SIGTSTP) leaves the screen, stops the sniffer, and comes back
/// (`onResume`) when the shell's `fg` continues it. The escape sequences
/// are xterm's, which every terminal emulator in use understands.
final class TopTerminal: @unchecked Sendable {
    // @unchecked Sendable: used only on the sniffer's loop's thread (the
    // sources' handlers run there).

    /// The terminal's size, as TIOCGWINSZ gave it when last asked (`updateSize`).
    private(set) var columns = 80
    private(set) var rows = 24
    /// Called on the loop's thread after Ctrl-Z and `fg`: the screen is to be drawn again.
    var onResume: (() -> Void)?

    private static let enterSequence = "\u{1B}[?1049h\u{1B}[?25l\u{1B}[H\u{1B}[2J"
    private static let leaveSequence = "\u{1B}[0m\u{1B}[?25h\u{1B}[?1049l"

    init() { updateSize() }

    /// Reads the terminal's size again (at start, and on SIGWINCH).
    func updateSize() {
        var size = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else { return }
        columns = Int(size.ws_col)
        rows = Int(size.ws_row)
    }

    /// Switches to the alternate screen with the keys unbuffered and unechoed.
    func enter() {
        guard !topTerminalActive else { return }
        if isatty(0) == 1 {
            var state = termios()
            if tcgetattr(0, &state) == 0 {
                // The first state is the shell's: the one to give back, even after Ctrl-Z and fg.
                if topTerminalSavedState == nil { topTerminalSavedState = state }
                var keys = state
                keys.c_lflag &= ~tcflag_t(ICANON | ECHO)
                withUnsafeMutableBytes(of: &keys.c_cc) { cc in
                    cc[Int(VMIN)] = 1
                    cc[Int(VTIME)] = 0
                }
                tcsetattr(0, TCSANOW, &keys)
            }
        }
        if !topTerminalExitHandlerSet {
            topTerminalExitHandlerSet = true
            atexit { TopTerminal.restore() }
        }
        topTerminalActive = true
        writeAll(1, Array(Self.enterSequence.utf8))
    }

    /// Back to the shell's screen, cursor and key handling. Safe to call twice.
    func leave() { Self.restore() }

    /// What `leave()` and the exit handler do; a static function, since a
    /// C exit handler captures nothing.
    private static func restore() {
        guard topTerminalActive else { return }
        topTerminalActive = false
        writeAll(1, Array(leaveSequence.utf8))
        if var state = topTerminalSavedState { tcsetattr(0, TCSANOW, &state) }
    }

    /// Draws a screen of lines, none wider than the terminal and no more
    /// than its rows, in one write, over the last one: each line is cleared
    /// before it is written (not after: a line as wide as the terminal
    /// leaves the cursor past its last column, where clearing would erase
    /// that column), and what is below the last line is cleared.
    func draw(_ lines: [String]) {
        var text = "\u{1B}[H"
        for (index, line) in lines.enumerated() {
            text += "\u{1B}[2K" + line
            if index < lines.count - 1 { text += "\r\n" }
        }
        // A newline on the bottom row would scroll the screen.
        if lines.count < rows { text += "\r\n\u{1B}[J" }
        writeAll(1, Array(text.utf8))
    }

    /// Reads keys from standard input on `loop`, handing each read's keys to
    /// `handler` (escape sequences, such as the arrow keys', left out). Also
    /// catches Ctrl-Z there. At end of input (not a terminal), stops reading.
    func readKeys(on loop: RunLoop, _ handler: @escaping @Sendable ([UInt8]) -> Void) throws {
        let keys = SocketSource(fileDescriptor: 0) { source, fd in
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 && (errno == EINTR || errno == EAGAIN) { return }
            // A closed or ended input would be reported readable forever.
            guard count > 0 else { source.invalidate(); return }
            handler(Self.keys(in: Array(buffer[..<count])))
        }
        try loop.add(keys, forMode: .default)
        try catchSuspend(on: loop)
    }

    /// The keys in what a read returned, without escape sequences: ESC,
    /// then `[` or `O`, then parameters up to a final byte (`@` to `~`).
    static func keys(in bytes: [UInt8]) -> [UInt8] {
        var keys: [UInt8] = []
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            guard byte == 0x1B else { keys.append(byte); continue }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "[") || bytes[index] == UInt8(ascii: "O") else { continue }
            index += 1
            while index < bytes.count, !(0x40...0x7E).contains(bytes[index]) { index += 1 }
            index += 1
        }
        return keys
    }

    /// Ctrl-Z: SIGTSTP writes a byte into a pipe whose read end is a source
    /// of the loop, which gives the terminal back and then stops the process
    /// (SIGTSTP's default action); `fg` continues it here.
    private func catchSuspend(on loop: RunLoop) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw ValidationError("pipe: \(String(cString: strerror(errno)))") }
        topTerminalSuspendWriteEnd = fds[1]
        Self.catchStop()
        let source = SocketSource(fileDescriptor: fds[0]) { [self] _, fd in
            var byte: UInt8 = 0
            _ = Glibc.read(fd, &byte, 1)
            leave()
            signal(SIGTSTP, SIG_DFL)
            raise(SIGTSTP)
            // Continued (fg): the terminal may have been resized meanwhile.
            Self.catchStop()
            updateSize()
            enter()
            onResume?()
        }
        try loop.add(source, forMode: .default)
    }

    private static func catchStop() {
        signal(SIGTSTP) { _ in
            var byte: UInt8 = 1
            _ = Glibc.write(topTerminalSuspendWriteEnd, &byte, 1)
        }
    }
}

// The terminal's state, for the exit and signal handlers, which capture nothing.
nonisolated(unsafe) private var topTerminalSavedState: termios?
nonisolated(unsafe) private var topTerminalActive = false
nonisolated(unsafe) private var topTerminalExitHandlerSet = false
nonisolated(unsafe) private var topTerminalSuspendWriteEnd: Int32 = -1
