internal import CLinuxSupport
import Glibc
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The frames of one large PortMessage on its way out, in the multipart
/// form (docs/wire-format.md): the header, one frame per component, and the
/// reply port's descriptor. (A packed message is written straight into the
/// frame libzmq sends: `MessageEncoder.writePacked`.)
struct OutgoingFrames {
    let header: UnsafeRawBufferPointer
    let components: [PortMessage.Component]
    let replyDescriptor: [UInt8]?
    /// Which of this process's ports go as version-4 descriptors (`MessageEncoder.relativeLimit`).
    let relativeLimit: UInt16

    var count: Int { 1 + components.count + (replyDescriptor == nil ? 0 : 1) }

    /// Sends frame `index` without blocking; false if there was no room.
    func send(_ index: Int, on socket: Socket) throws -> Bool {
        let more = index < count - 1
        if index == 0 { return try socket.send(header, more: more, dontWait: true) }
        if index <= components.count {
            switch components[index - 1] {
            case let .data(data):
                return try socket.send(data, more: more, dontWait: true)
            case let .port(port):
                return try port.descriptorBytes(relativeLimit: relativeLimit).withUnsafeBytes { try socket.send($0, more: more, dontWait: true) }
            }
        }
        return try replyDescriptor!.withUnsafeBytes { try socket.send($0, more: more, dontWait: true) }
    }
}
