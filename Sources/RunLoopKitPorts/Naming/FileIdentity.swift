import Glibc

/// A file's device and inode, to tell whether a path still names an open file.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    init?(_ fd: Int32) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    init?(path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    /// The device's major and minor numbers, as the kernel splits `st_dev`
    /// (glibc's `gnu_dev_major`/`gnu_dev_minor`).
    var major: UInt64 { ((device >> 8) & 0xfff) | ((device >> 32) & ~0xfff) }
    var minor: UInt64 { (device & 0xff) | ((device >> 12) & ~0xff) }
}
