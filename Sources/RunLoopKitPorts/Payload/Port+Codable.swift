/// A `Port` inside a `Codable` value travels in a typed payload as a port
/// component (`PortMessage(payload:)`); the payload's coder handles it
/// itself and never calls these. Any other coder cannot carry a port: it
/// gets an error that says so, never a port's bytes.
extension Port: Codable {
    /// Throws `EncodingError.invalidValue`: only a typed payload carries a
    /// port, and its coder never calls this.
    public func encode(to encoder: any Encoder) throws {
        throw EncodingError.invalidValue(self, EncodingError.Context(
            codingPath: encoder.codingPath,
            debugDescription: "a Port travels only in a typed payload (PortMessage(payload:), Port.send(_:before:)), as a port component"))
    }

    /// Throws `DecodingError.dataCorrupted`: a port comes only out of a
    /// typed payload, whose coder hands back the port component itself.
    public convenience init(from decoder: any Decoder) throws {
        throw DecodingError.dataCorrupted(DecodingError.Context(
            codingPath: decoder.codingPath,
            debugDescription: "a Port comes only from a typed payload (PortMessage.payload(as:)), where it is a port component"))
    }
}
