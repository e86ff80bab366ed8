internal import CZeroMQ

/// Facts about the libzmq this process runs with.
///
/// Thread rules: both members only read immutable library facts; call them from any thread.
public enum ZMQ {
    /// The libzmq version linked at run time (`zmq_version`), for example `(4, 3, 4)`.
    public static var version: (major: Int, minor: Int, patch: Int) {
        var major: Int32 = 0
        var minor: Int32 = 0
        var patch: Int32 = 0
        zmq_version(&major, &minor, &patch)
        return (Int(major), Int(minor), Int(patch))
    }

    /// Whether libzmq was built with `capability` (`zmq_has`): for example `"ipc"`,
    /// `"curve"`, `"draft"` (Debian's 4.3.4 says no to `"draft"`, so no thread-safe
    /// socket types). Unknown names give `false`.
    public static func has(_ capability: String) -> Bool {
        zmq_has(capability) == 1
    }
}
