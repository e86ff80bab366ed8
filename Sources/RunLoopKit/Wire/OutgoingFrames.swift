internal import CLinuxSupport
import Glibc
import ZeroMQ

/// The frames of one large PortMessage on its way out, in the multipart
/// form (docs/wire-format.md): the header, one frame per component, and the
/// reply port's descriptor. (A packed message is written straight into the
/// frame libzmq sends: `MessageEncoder.writePacked`.)
struct OutgoingFrames {
    let header: UnsafeRawBufferPointer
    let components: [PortMessage.Component]
    /// The descriptors of the port components, in component order.
    let portDescriptors: [[UInt8]]
    let replyDescriptor: [UInt8]?

    init(header: UnsafeRawBufferPointer, components: [PortMessage.Component], portDescriptors: [[UInt8]], replyDescriptor: [UInt8]?) {
        self.header = header
        self.components = components
        self.portDescriptors = portDescriptors
        self.replyDescriptor = replyDescriptor
    }

    var count: Int { 1 + components.count + (replyDescriptor == nil ? 0 : 1) }

    /// Sends frame `index` without blocking; false if there was no room.
    /// `portsSent` counts the port components already sent, which says
    /// which descriptor a port component's frame carries.
    func send(_ index: Int, on socket: Socket, portsSent: inout Int) throws -> Bool {
        let more = index < count - 1
        if index == 0 { return try socket.send(header, more: more, dontWait: true) }
        if index <= components.count {
            switch components[index - 1] {
            case let .data(data):
                return try socket.send(data, more: more, dontWait: true)
            case .port:
                defer { portsSent += 1 }
                return try portDescriptors[portsSent].withUnsafeBytes { try socket.send($0, more: more, dontWait: true) }
            }
        }
        return try replyDescriptor!.withUnsafeBytes { try socket.send($0, more: more, dontWait: true) }
    }
}
