import Glibc

extension Sniffer {
    /// Lowers the calling thread's priority to `niceness` (--nice; Linux
    /// keeps one per thread; 0 leaves it). What the sniffer's thread does
    /// with the events (decoding, filtering, showing, writing) may lag: its
    /// reader's own thread takes the batches as they come and holds them.
    /// On a busy machine it then leaves the CPU first to that thread and to
    /// the processes it watches, whose tap, kept waiting, drops what it
    /// cannot hold. Called once the traced command started, which would
    /// have inherited it.
    func yieldToTheTraffic() {
        guard niceness > 0 else { return }
        // Who 0: the calling thread.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, niceness)
    }
}
