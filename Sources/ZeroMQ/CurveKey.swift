internal import CZeroMQ
internal import Glibc

/// A CURVE key (32 bytes), public or secret, with its Z85 text form (40
/// characters), as libzmq's CURVE mechanism and key files use it
/// (`man zmq_curve`, `man zmq_z85_encode`).
///
/// Its `description` shows only the first characters of the text form, so
/// that a secret key printed by mistake is not given away.
///
/// Thread rules: a value; use it from any thread.
public struct CurveKey: Sendable, Hashable, CustomStringConvertible {
    /// The key's 32 bytes.
    public let bytes: [UInt8]

    /// The length of a key in bytes.
    public static let byteCount = 32
    /// The length of its Z85 text form in characters.
    public static let textCount = 40

    /// A key from its 32 bytes.
    /// - Throws: ``ZMQError`` (`EINVAL`, operation `CurveKey(bytes:)`) for any other length.
    public init(bytes: [UInt8]) throws(ZMQError) {
        guard bytes.count == Self.byteCount else { throw ZMQError(code: EINVAL, operation: "CurveKey(bytes:) with \(bytes.count) bytes, not 32") }
        self.bytes = bytes
    }

    /// A key from its Z85 text form (40 characters of Z85's alphabet).
    /// - Throws: ``ZMQError`` (`EINVAL`, operation `zmq_z85_decode`) for text of another
    ///   length or with a character outside the alphabet.
    public init(z85 text: String) throws(ZMQError) {
        let characters = Array(text.utf8)
        guard characters.count == Self.textCount, characters.allSatisfy(Self.isZ85) else {
            throw ZMQError(code: EINVAL, operation: "zmq_z85_decode: a CURVE key is 40 characters of Z85, not \"\(text.prefix(48))\"")
        }
        var decoded = [UInt8](repeating: 0, count: Self.byteCount)
        let ok = (characters + [0]).withUnsafeBufferPointer { source in
            source.withMemoryRebound(to: CChar.self) { zmq_z85_decode(&decoded, $0.baseAddress) != nil }
        }
        guard ok else { throw ZMQError(code: EINVAL, operation: "zmq_z85_decode: \"\(text)\" is not Z85") }
        bytes = decoded
    }

    /// The key as Z85 text (40 characters).
    public var z85: String {
        var text = [CChar](repeating: 0, count: Self.textCount + 1)
        _ = bytes.withUnsafeBufferPointer { zmq_z85_encode(&text, $0.baseAddress, $0.count) }
        return String(decoding: text.prefix(Self.textCount).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `CurveKey(abcdefgh…)`: the first 8 characters of the text form.
    public var description: String { "CurveKey(\(z85.prefix(8))…)" }

    /// Z85's alphabet (ZeroMQ RFC 32).
    private static func isZ85(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
            || Array(".-:+=^!/*?&<>()[]{}@%$#".utf8).contains(byte)
    }
}

/// A CURVE key pair: a public key to give peers, a secret key to keep.
///
/// Thread rules: a value; use it from any thread.
public struct CurveKeyPair: Sendable, Hashable {
    /// The key peers are given (a server's, in a client's `ZMQ_CURVE_SERVERKEY`).
    public let publicKey: CurveKey
    /// The key kept secret.
    public let secretKey: CurveKey

    /// A new pair from libzmq's random source (`zmq_curve_keypair`).
    /// - Throws: ``ZMQError`` (`ENOTSUP` when libzmq was built without CURVE: see
    ///   ``ZMQ/has(_:)`` with `"curve"`).
    public static func generate() throws(ZMQError) -> CurveKeyPair {
        var publicText = [CChar](repeating: 0, count: CurveKey.textCount + 1)
        var secretText = [CChar](repeating: 0, count: CurveKey.textCount + 1)
        guard zmq_curve_keypair(&publicText, &secretText) == 0 else { throw ZMQError(code: zmq_errno(), operation: "zmq_curve_keypair") }
        func text(_ characters: [CChar]) -> String {
            String(decoding: characters.prefix(CurveKey.textCount).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return CurveKeyPair(publicKey: try CurveKey(z85: text(publicText)), secretKey: try CurveKey(z85: text(secretText)))
    }

    /// The pair of `secretKey`, its public key derived (`zmq_curve_public`).
    /// - Throws: ``ZMQError`` (`ENOTSUP` without CURVE).
    public init(secretKey: CurveKey) throws(ZMQError) {
        var publicText = [CChar](repeating: 0, count: CurveKey.textCount + 1)
        let secretText = Array(secretKey.z85.utf8CString)
        guard zmq_curve_public(&publicText, secretText) == 0 else { throw ZMQError(code: zmq_errno(), operation: "zmq_curve_public") }
        publicKey = try CurveKey(z85: String(decoding: publicText.prefix(CurveKey.textCount).map { UInt8(bitPattern: $0) }, as: UTF8.self))
        self.secretKey = secretKey
    }

    private init(publicKey: CurveKey, secretKey: CurveKey) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }
}
