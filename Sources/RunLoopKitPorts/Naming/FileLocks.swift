import Glibc

/// The kernel's table of file locks, `/proc/locks`: the one place that says
/// which process holds a `flock`, which a name lookup needs to trust a name
/// file (`NameLock`, docs/ports.md, "Names").
///
/// A line reads `1: FLOCK  ADVISORY  WRITE 4242 fe:00:16220187 0 EOF`: an
/// id, the kind, `WRITE` for an exclusive lock (`READ` for a shared one),
/// the holder's pid (as this process's pid namespace sees it), the device's
/// major and minor numbers in hex and the inode in decimal. A process
/// waiting for a lock has a line whose kind is preceded by `->`: not a
/// holder.
enum FileLocks {
    /// The pid holding an exclusive flock on the file, if any.
    static func exclusiveHolder(of file: FileIdentity) -> Int32? {
        let fd = open("/proc/locks", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        // The table is small (a line per lock on the machine); read it whole.
        var text: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count <= 0 { break }
            text += chunk[..<count]
        }
        for line in text.split(separator: UInt8(ascii: "\n")) {
            if let pid = exclusiveFlockHolder(line: line, of: file) { return pid }
        }
        return nil
    }

    /// The holder's pid if `line` is an exclusive flock held on `file`.
    static func exclusiveFlockHolder(line: ArraySlice<UInt8>, of file: FileIdentity) -> Int32? {
        let fields = line.split(separator: UInt8(ascii: " "))
        // id, FLOCK, ADVISORY, WRITE, pid, maj:min:inode, start, end
        guard fields.count >= 6,
              fields[1].elementsEqual("FLOCK".utf8),
              fields[3].elementsEqual("WRITE".utf8) else { return nil }
        let place = fields[5].split(separator: UInt8(ascii: ":"))
        guard place.count == 3,
              let major = UInt64(String(decoding: place[0], as: UTF8.self), radix: 16),
              let minor = UInt64(String(decoding: place[1], as: UTF8.self), radix: 16),
              let inode = UInt64(String(decoding: place[2], as: UTF8.self)),
              major == file.major, minor == file.minor, inode == file.inode else { return nil }
        return Int32(String(decoding: fields[4], as: UTF8.self))
    }
}
