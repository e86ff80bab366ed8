import Foundation
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The production decoders, fed from bytes instead of a socket: the entry
/// of the fuzzer (`Tools/wire-fuzz`) and of the test that replays its
/// corpus (docs/fuzzing.md). Nothing here is a copy: a message's frames
/// are held by `IncomingFrames.hold`, exactly as a receive holds them,
/// then decoded by one `MessageDecoder` both ways a port decodes (the
/// record walk into a `PortMessage`, and in place for a
/// `PortMessageView`), and a name file's bytes go through the reading a
/// lookup does. Ports are resolved as a receiver resolves them, through a
/// `PortRegistry`, but one made for the input, which does not watch their
/// made-up owners: each input decodes the same whatever ran before it (the
/// process's registry, shared, once let a made-up descriptor decide what a
/// later test's real one resolved to), so that a finding reproduces.
///
/// Beyond "no crash, no leak, no hang" (what the sanitizers and libFuzzer
/// check), it checks that the two decoders agree: both accept a message
/// and read the same msgid, components, reply port, trace id and trace
/// context, or both
/// refuse it with the same error; a disagreement traps, so that the
/// fuzzer reports it.
package enum WireFuzzing {
    /// What an input reached: which decode errors, which descriptor
    /// versions (in messages or name files), how many messages decoded.
    package struct Outcome: Sendable {
        package var decodedMessages = 0
        package var refusedMessages = 0
        package var errors: Set<String> = []
        package var descriptorVersions: Set<UInt8> = []
        /// The tap's batches decoded and refused, and the refusals' errors.
        package var decodedBatches = 0
        package var refusedBatches = 0
        package var tapErrors: Set<String> = []
        /// Typed payloads read and refused, and the refusals' errors (the
        /// payload's, then the value's when it is read as a `FuzzShape`).
        package var decodedPayloads = 0
        package var refusedPayloads = 0
        package var payloadErrors: Set<String> = []

        package mutating func merge(_ other: Outcome) {
            decodedMessages += other.decodedMessages
            refusedMessages += other.refusedMessages
            errors.formUnion(other.errors)
            descriptorVersions.formUnion(other.descriptorVersions)
            decodedBatches += other.decodedBatches
            refusedBatches += other.refusedBatches
            tapErrors.formUnion(other.tapErrors)
            decodedPayloads += other.decodedPayloads
            refusedPayloads += other.refusedPayloads
            payloadErrors.formUnion(other.payloadErrors)
        }
    }

    /// The name of every `WireFormat.DecodeError` case: what the corpus
    /// must reach, one input or another. (A new case fails to compile in
    /// `name(of:)` below until it is named there: add it here too.)
    package static let errorNames = [
        "shortFrame", "badMagic", "unsupportedVersion", "unknownFlags", "unknownComponentKind",
        "tooManyComponents", "frameCountMismatch", "frameTooLarge", "badPackedRecords",
        "messageTooLarge", "badDescriptor", "badExtension",
    ]

    /// The name of every `PortTapFormatError` case: what the corpus must
    /// reach with tap batches.
    package static let tapErrorNames = [
        "frameCount", "shortHeader", "badMagic", "unsupportedVersion", "badHeaderSize", "badRecordSize",
        "recordCountMismatch", "badName", "badKind", "badHeadLength", "badActorCall",
    ]

    /// Decodes what `input` holds (`FuzzInput`) and says what it reached.
    @discardableResult
    package static func run(_ input: UnsafeRawBufferPointer) -> Outcome {
        switch FuzzInput(input) {
        case let .nameFile(bytes): readNameFile(bytes)
        case let .messages(messages): FuzzInput.isOverConnection(input) ? decodeOverConnection(messages) : decode(messages)
        case let .tapBatches(batches): decodeTapBatches(batches)
        case let .payload(bytes): decodePayload(bytes)
        }
    }

    /// The `PayloadError` cases the corpus must reach (`wrongType` needs a
    /// type to expect, which the fuzzer's payloads do not name).
    package static let payloadErrorNames = ["notAPayload", "unsupportedVersion", "unknownEncoding", "malformed", "valueDoesNotFit"]

    /// A typed payload, read as a receiver reads one: its header, then its
    /// body in its encoding. What reads must read the same when written
    /// again in its encoding (the writer and the reader agree), and is then
    /// decoded as a `FuzzShape`, through the `Decoder` a typed handler uses.
    private static func decodePayload(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        var outcome = Outcome()
        do throws(PayloadError) {
            let header = try Payload.readHeader(bytes)
            let tree = try Payload.tree(bytes, header)
            let again = Payload.bytes(of: tree, typeName: header.typeName, encoding: header.encoding)
            let reread = again.withUnsafeBytes { bytes in
                Result { () throws(PayloadError) in try Payload.tree(bytes, Payload.readHeader(bytes)) }
            }
            guard case let .success(same) = reread, same == tree else {
                fatalError("a payload written again reads otherwise: \(tree) became \(reread)")
            }
            outcome.decodedPayloads += 1
            _ = try PayloadDecoder.decode(FuzzShape.self, from: tree, ports: [])
        } catch {
            outcome.refusedPayloads += 1
            outcome.payloadErrors.insert(error.caseName)
        }
        return outcome
    }

    /// The tap's batches, through one public decoder, as a reader receives
    /// them (names announced by one batch serve the next). Whatever a batch
    /// decodes to must read back: every event's head at most 16 bytes, its
    /// number and kind as the record said.
    private static func decodeTapBatches(_ batches: [[FuzzInput.Frame]]) -> Outcome {
        var outcome = Outcome()
        var decoder = PortTapDecoder()
        for frames in batches {
            // An oversized frame stands for its given bytes here: the tap's
            // frames have no size limit of their own beyond ZeroMQ's.
            let result: Result<PortTapBatch, PortTapFormatError>
            if frames.count == 2 {
                do throws(PortTapFormatError) {
                    result = .success(try decoder.decode(header: frames[0].bytes, records: frames[1].bytes))
                } catch {
                    result = .failure(error)
                }
            } else {
                do throws(PortTapFormatError) {
                    result = .success(try decoder.decode(frames.map { Data($0.bytes) }))
                } catch {
                    result = .failure(error)
                }
            }
            switch result {
            case let .success(batch):
                precondition(batch.events.allSatisfy { $0.head.count <= 16 }, "a tap event with a head over 16 bytes")
                outcome.decodedBatches += 1
            case let .failure(error):
                outcome.refusedBatches += 1
                outcome.tapErrors.insert(error.caseName)
            }
        }
        return outcome
    }

    /// A name file's bytes, read as a lookup reads them: at most one byte
    /// over the longest name file (`NameLock.readNameFile`).
    private static func readNameFile(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        var outcome = Outcome()
        let read = UnsafeRawBufferPointer(rebasing: bytes.prefix(WireFormat.maxNameFileBytes + 1))
        do throws(WireFormat.DecodeError) {
            let holder = try WireFormat.decodeNameFile(read).holder
            outcome.descriptorVersions.insert(WireFormat.descriptorVersion(of: holder))
        } catch {
            outcome.errors.insert(name(of: error))
        }
        return outcome
    }

    /// The instance the home frame of a connection's input is read as.
    static let connectionPeer = ProcessInstance(high: 0x0706_0504_0302_0100, low: 0x0F0E_0D0C_0B0A_0908)

    /// The first frame read as the sender's home frame (its refusal is an
    /// error reached), then the messages after it as a tcp reader hands
    /// them over: read against that home, if it was one.
    private static func decodeOverConnection(_ messages: [[FuzzInput.Frame]]) -> Outcome {
        var outcome = Outcome()
        var home: TCPHome?
        if let first = messages.first?.first {
            do throws(WireFormat.DecodeError) { home = try WireFormat.decodeHome(first.bytes, of: connectionPeer) } catch {
                outcome.errors.insert(name(of: error))
            }
        }
        outcome.merge(decode(Array(messages.dropFirst()), sender: home))
        return outcome
    }

    /// Each message decoded by the record walk and then in place, by the
    /// same decoder (as a receiver's one decoder serves both kinds of
    /// handler), into an inbox and an in-place message kept across the
    /// input's messages, as a batch keeps them; `sender`: the home they
    /// are read against (over a tcp connection), if any.
    private static func decode(_ messages: [[FuzzInput.Frame]], sender: TCPHome? = nil) -> Outcome {
        var outcome = Outcome()
        var decoder = MessageDecoder(registry: PortRegistry(watchesOwners: false))
        let frames = IncomingFrames()
        let inPlace = InPlaceMessage()
        frames.setSender(sender, tag: sender?.tag ?? 0)
        inPlace.frames.setSender(sender, tag: sender?.tag ?? 0)
        var inbox = PortMessage()
        var batchReplyPort: Port?
        for message in messages {
            let relativeBefore = decoder.relativeDescriptorsResolved
            frames.hold(message)
            let walked: Result<UInt64?, WireFormat.DecodeError>
            do throws(WireFormat.DecodeError) {
                walked = .success(try decoder.decode(frames, into: &inbox))
            } catch {
                walked = .failure(error)
            }
            frames.clear()
            inPlace.forgetDecoded()
            inPlace.frames.hold(message)
            var inPlaceError: WireFormat.DecodeError?
            do throws(WireFormat.DecodeError) {
                try decoder.decodeInPlace(inPlace, replyPort: &batchReplyPort)
            } catch {
                inPlaceError = error
                inPlace.clear()
            }
            switch (walked, inPlaceError) {
            case let (.success(traceID), nil):
                requireSame(inbox, traceID, inPlace, batchReplyPort)
                outcome.decodedMessages += 1
                let ports = inbox.components.compactMap { component -> Port? in
                    if case let .port(port) = component { port } else { nil }
                }
                for port in ports + [inbox.sendPort].compactMap({ $0 }) {
                    outcome.descriptorVersions.insert(WireFormat.descriptorVersion(of: port.address))
                }
                if decoder.relativeDescriptorsResolved > relativeBefore {
                    outcome.descriptorVersions.insert(WireFormat.descriptorVersionRelative)
                }
            case let (.failure(error), inPlaceError?) where error == inPlaceError:
                outcome.refusedMessages += 1
                outcome.errors.insert(name(of: error))
            default:
                fatalError("the decoders disagree: the record walk gives \(walked), the in-place decoder \(inPlaceError.map { "\($0)" } ?? "a message")")
            }
        }
        return outcome
    }

    /// Traps unless the in-place decoder read what the record walk did.
    private static func requireSame(_ inbox: PortMessage, _ traceID: UInt64?, _ inPlace: InPlaceMessage, _ replyPort: Port?) {
        let header = inPlace.header
        precondition(inbox.msgid == header.msgid, "the decoders disagree on the msgid")
        precondition(traceID == header.traceID, "the decoders disagree on the trace id")
        let inPlaceTrace = header.hasTraceContext ? WireFormat.traceContext(ofHeader: inPlace.headerFrame) : nil
        precondition(inbox.traceContext == inPlaceTrace, "the decoders disagree on the trace context")
        precondition(inbox.components.count == header.componentCount, "the decoders disagree on the component count")
        precondition(inbox.sendPort?.address == replyPort?.address, "the decoders disagree on the reply port")
        for (index, component) in inbox.components.enumerated() {
            switch component {
            case let .data(data):
                precondition(!inPlace.isPort(index), "component \(index): data to one decoder, a port to the other")
                let bytes = inPlace.bytes(ofComponent: index)
                precondition(data.elementsEqual(bytes), "component \(index): the decoders read different bytes")
            case let .port(port):
                precondition(inPlace.isPort(index), "component \(index): a port to one decoder, data to the other")
                precondition(port.address == inPlace.port(ofComponent: index).address, "component \(index): the decoders resolved different ports")
            }
        }
    }

    /// The case's name, without its payload.
    private static func name(of error: WireFormat.DecodeError) -> String {
        switch error {
        case .shortFrame: "shortFrame"
        case .badMagic: "badMagic"
        case .unsupportedVersion: "unsupportedVersion"
        case .unknownFlags: "unknownFlags"
        case .unknownComponentKind: "unknownComponentKind"
        case .tooManyComponents: "tooManyComponents"
        case .frameCountMismatch: "frameCountMismatch"
        case .frameTooLarge: "frameTooLarge"
        case .badPackedRecords: "badPackedRecords"
        case .messageTooLarge: "messageTooLarge"
        case .badDescriptor: "badDescriptor"
        case .badExtension: "badExtension"
        }
    }
}
