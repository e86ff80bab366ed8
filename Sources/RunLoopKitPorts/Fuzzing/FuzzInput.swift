import ZeroMQ

/// What one fuzzer input asks for, read from its bytes (docs/fuzzing.md,
/// "Input format"): a name file's bytes, or messages' frames to decode one
/// after another with the same decoder, as a port receives them.
///
/// Every byte string is a valid input: whatever is cut short ends where
/// the bytes end. A frame can be marked oversized, so that a small input
/// reaches the size limits.
package enum FuzzInput {
    /// A frame: its leading bytes, and its length (their count, or one
    /// byte over the frame limit).
    package typealias Frame = (bytes: UnsafeRawBufferPointer, length: Int)

    /// The bytes of a name file (`<name>.lock`), as a lookup reads them.
    case nameFile(UnsafeRawBufferPointer)
    /// Messages, each its frames, in the order they arrive; over a tcp
    /// connection when `isOverConnection` says so.
    case messages([[Frame]])
    /// The tap's batches (docs/tap-format.md), each its frames, in the
    /// order a reader receives them.
    case tapBatches([[Frame]])
    /// A typed payload's bytes (a message's first component), as
    /// `PortMessage.payload(as:)` reads them.
    case payload(UnsafeRawBufferPointer)

    /// A frame's length field with its top bit set makes the frame one
    /// byte over the frame limit, its given bytes first: all the size
    /// limits need (a frame over 64 MiB, a message over 256 MiB).
    static let oversizedFlag: UInt16 = 0x8000
    static let oversizedLength = WireFormat.maxFrameBytes + 1

    /// The first byte that chooses the tap's batches.
    static let tapBatchTarget: UInt8 = 2
    /// The first byte that chooses a typed payload: `P`.
    static let payloadTarget: UInt8 = 0x50
    /// The first byte that chooses messages over a tcp connection.
    static let connectionTarget: UInt8 = 4

    /// Whether `input`'s messages came over a tcp connection: the first
    /// frame is then the sender's home frame (`TCPHome`), and the messages
    /// after it are read against it (version-4 descriptors among them).
    /// (Not a case of its own: the check of the API against the last
    /// release, scripts/check-api-breaks.sh, counts a new case as a break.)
    static func isOverConnection(_ input: UnsafeRawBufferPointer) -> Bool { input.first == connectionTarget }

    /// Reads `input`: its first byte chooses tap batches (exactly 2), a
    /// typed payload (exactly 0x50, the rest of the input), messages over a
    /// tcp connection (exactly 4), else by its low bit a name file (1) or
    /// messages (0).
    ///
    /// Messages and batches: each is a 2-byte little-endian frame count,
    /// then that many frames; each frame a 2-byte little-endian length
    /// field, whose low 15 bits are `n` (its top bit: the frame is
    /// oversized), then `n` bytes.
    package init(_ input: UnsafeRawBufferPointer) {
        var reader = Reader(input)
        let target = reader.byte() ?? 0
        guard target & 1 == 0 else {
            self = .nameFile(reader.rest())
            return
        }
        guard target != Self.payloadTarget else {
            self = .payload(reader.rest())
            return
        }
        let messages = Self.messages(&reader)
        self = target == Self.tapBatchTarget ? .tapBatches(messages) : .messages(messages)
    }

    private static func messages(_ reader: inout Reader) -> [[Frame]] {
        var messages: [[Frame]] = []
        while let count = reader.uint16() {
            var frames: [Frame] = []
            for _ in 0..<count {
                guard let field = reader.uint16() else { break }
                let bytes = reader.bytes(Int(field & ~Self.oversizedFlag))
                frames.append((bytes, field & Self.oversizedFlag == 0 ? bytes.count : Self.oversizedLength))
            }
            if !frames.isEmpty { messages.append(frames) }
        }
        return messages
    }

    /// Reads fields off the front of the input; nil once it runs out.
    private struct Reader {
        private var remaining: UnsafeRawBufferPointer

        init(_ input: UnsafeRawBufferPointer) { remaining = input }

        mutating func byte() -> UInt8? {
            guard !remaining.isEmpty else { return nil }
            return bytes(1)[0]
        }

        mutating func uint16() -> UInt16? {
            guard remaining.count >= 2 else { return nil }
            return UInt16(littleEndian: bytes(2).loadUnaligned(as: UInt16.self))
        }

        /// The next `count` bytes, or all that are left.
        mutating func bytes(_ count: Int) -> UnsafeRawBufferPointer {
            let taken = UnsafeRawBufferPointer(rebasing: remaining.prefix(count))
            remaining = UnsafeRawBufferPointer(rebasing: remaining.dropFirst(taken.count))
            return taken
        }

        mutating func rest() -> UnsafeRawBufferPointer { bytes(remaining.count) }
    }
}
