// rlk-net-peer: one RunLoopKit process on one end of a tcp test (the
// network tests run it on loopback and inside network-namespace hosts).
//
//   rlk-net-peer serve <bind address> [plain]
//       A tcp port on a LoopThread, listening at <bind address> (port 0).
//       Prints "PORT <descriptor in hex>" and "PID <pid>", then serves
//       until its standard input closes: msgid 1 echoes the message to its
//       reply port; msgid 2 sends "via <instance>" (msgid 3) to the port
//       component it carries, then replies.
//   rlk-net-peer call <descriptor in hex> <count>
//       <count> requests (msgid 1) to that port, each carrying "n"; prints
//       "REPLY n" for each, then "DONE"; on an error "ERROR <case> <text>"
//       and exit status 1.
import Glibc
import RunLoopKit
import RunLoopKitPorts

func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

func bytes(fromHex text: String) -> [UInt8] {
    var result: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex, let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex) {
        result.append(UInt8(text[index..<next], radix: 16) ?? 0)
        index = next
    }
    return result
}

func fail(_ error: Error) -> Never {
    let name = (error as? PortError)?.caseName ?? "other"
    say("ERROR \(name) \(error)")
    exit(1)
}

func serve(bind: String, plain: Bool) throws {
    let thread = LoopThread(name: "peer")
    try thread.start()
    let port = try Port(transport: .tcp(.listening(on: bind, port: 0, security: plain ? .plainText : .curve)))
    port.setMessageHandler { message in
        do {
            if message.msgid == 2, case let .port(target)? = message.components.first {
                try target.send(msgid: 3, components: [.data(Data("via \(getpid())".utf8))], before: Date() + 5)
            }
            try message.replyPort?.send(msgid: message.msgid, components: message.components, before: Date() + 5)
        } catch {
            say("HANDLER-ERROR \(error)")
        }
    }
    try port.schedule(on: thread)
    say("PORT \(hex(port.descriptor))")
    say("PID \(getpid())")
    var buffer = [UInt8](repeating: 0, count: 256)
    while read(0, &buffer, buffer.count) > 0 {}
    port.invalidate()
    thread.stop()
}

func call(descriptor: String, count: Int) throws {
    let port = try Port.fromDescriptor(bytes(fromHex: descriptor))
    for index in 0..<count {
        let reply = try port.sendRequest(msgid: 1, components: [.data(Data("\(index)".utf8))], sendTimeout: 10, receiveTimeout: 10)
        say("REPLY \(String(decoding: reply.dataComponents.first ?? Data(), as: UTF8.self))")
    }
    say("DONE")
}

let arguments = CommandLine.arguments
do {
    switch arguments.count > 1 ? arguments[1] : "" {
    case "serve" where arguments.count >= 3:
        try serve(bind: arguments[2], plain: arguments.count > 3 && arguments[3] == "plain")
    case "call" where arguments.count >= 4:
        try call(descriptor: arguments[2], count: Int(arguments[3]) ?? 1)
    default:
        say("usage: rlk-net-peer serve <bind address> [plain] | call <descriptor hex> <count>")
        exit(2)
    }
} catch {
    fail(error)
}
