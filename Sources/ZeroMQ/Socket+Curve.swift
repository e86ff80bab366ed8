internal import CZeroMQ
internal import Glibc

/// CURVE security on a socket (`man zmq_curve`): set before `bind` or
/// `connect`, as libzmq applies it to connections made afterwards.
///
/// A CURVE server without a ZAP handler in its context accepts any client
/// key (seen with Debian's libzmq 4.3.4, even with `ZMQ_ZAP_ENFORCE_DOMAIN`):
/// a server that must refuse unknown clients needs its context's ZAP handler
/// bound before the server binds.
///
/// Thread rules for every member: owner thread (see ``Socket``).
extension Socket {
    /// The security mechanism of the socket's connections (`ZMQ_MECHANISM`).
    public enum Mechanism: Int32, Sendable {
        /// No security (the default).
        case null = 0
        /// User name and password in plain text.
        case plain = 1
        /// CURVE: encrypted and authenticated (CurveZMQ).
        case curve = 2
        /// GSSAPI (Kerberos).
        case gssapi = 3
    }

    /// Makes the socket a CURVE server with `keys` (`ZMQ_CURVE_SERVER`,
    /// `ZMQ_CURVE_SECRETKEY`): clients must know `keys.publicKey`.
    /// - Throws: ``ZMQError`` (`EINVAL` without CURVE in libzmq, `ENOTSOCK`).
    public func setCurveServer(_ keys: CurveKeyPair) throws(ZMQError) {
        try setOption(ZMQ_CURVE_SERVER, Int32(1))
        try setCurveKey(ZMQ_CURVE_SECRETKEY, keys.secretKey)
    }

    /// Makes the socket a CURVE client with `keys` that accepts only the
    /// server whose public key is `serverKey` (`ZMQ_CURVE_PUBLICKEY`,
    /// `ZMQ_CURVE_SECRETKEY`, `ZMQ_CURVE_SERVERKEY`).
    /// - Throws: ``ZMQError`` (`EINVAL` without CURVE in libzmq, `ENOTSOCK`).
    public func setCurveClient(_ keys: CurveKeyPair, serverKey: CurveKey) throws(ZMQError) {
        try setCurveKey(ZMQ_CURVE_PUBLICKEY, keys.publicKey)
        try setCurveKey(ZMQ_CURVE_SECRETKEY, keys.secretKey)
        try setCurveKey(ZMQ_CURVE_SERVERKEY, serverKey)
    }

    /// The mechanism the socket was set to (`ZMQ_MECHANISM`).
    /// - Throws: ``ZMQError`` (`ENOTSOCK`).
    public var mechanism: Mechanism {
        get throws(ZMQError) { Mechanism(rawValue: try int32Option(ZMQ_MECHANISM)) ?? .null }
    }

    private func setCurveKey(_ option: Int32, _ key: CurveKey) throws(ZMQError) {
        // withUnsafeBytes rethrows untyped errors: the typed one travels in a Result.
        let outcome: Result<Void, ZMQError> = key.bytes.withUnsafeBytes { buffer in
            Result { () throws(ZMQError) in try setOption(option, bytes: buffer) }
        }
        try outcome.get()
    }
}
