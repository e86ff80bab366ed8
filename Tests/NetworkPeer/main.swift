// rlk-net-peer: one RunLoopKit process on one end of a tcp test (the
// network tests run it on loopback and inside network-namespace hosts).
//
//   rlk-net-peer serve <bind address> <tcp port, 0 for any> [plain] [name <name>]
//       A tcp port on a LoopThread, listening there, registered under
//       <name> if given (served to lookups at the endpoint). Prints "PORT
//       <descriptor in hex>" and "PID <pid>", then serves until SIGTERM (at
//       most two minutes): msgid 1 echoes the message to its reply port;
//       msgid 2 sends "via <pid>" (msgid 3) to the port component it
//       carries, then replies; msgid 3 prints "GOT <text>"; msgid 4 is
//       never answered.
//       Each msgid 1 is printed as "REQ <text>".
//   rlk-net-peer exchange <descriptor in hex> <bind address>
//       Makes a tcp port of its own at <bind address>, sends it to that
//       port as a component (msgid 2) and waits for the peer's send to it:
//       prints "BACK <text>" and exits 0.
//   rlk-net-peer pass <descriptor in hex> <another descriptor in hex>
//       Sends the second port to the first as a component (msgid 2), so
//       that the first's process sends to it; prints "PASSED".
//   rlk-net-peer hold <descriptor in hex>
//       A request (msgid 4) the peer never answers: prints "WAITING", then
//       how it ended ("ERROR <case> <text>", exit 1).
//   rlk-net-peer flood <descriptor in hex> [block bytes, 64 KiB unless given] [stay]
//       One request (then prints "CONNECTED"), then sends messages of that
//       size (msgid 5), each starting with its index (UInt64, little-endian),
//       with a 200 ms deadline until one finds no room, prints "FULL <sent>",
//       and returns from main: the exit then waits for what was accepted at
//       most the exit bound. With "stay", it waits for SIGTERM first.
//   rlk-net-peer lookup <endpoint> <server public key> <name>
//       Looks <name> up at <endpoint> (S-NET-4) and makes one request
//       (msgid 1, "looked-up") to the port it gets: prints "REPLY <text>";
//       on an error "ERROR <case> <text>" and exit status 1.
//   rlk-net-peer call <descriptor in hex> <count> [payload] [pause ms]
//       <count> requests (msgid 1) to that port, each carrying the payload
//       and "n", a pause apart; prints "REPLY n" for each, then "DONE"; on
//       an error "ERROR <case> <text>" and exit status 1.
import Dispatch
import Glibc
import NetworkPeerSupport
import RunLoopKit
import RunLoopKitPorts

func fail(_ error: Error) -> Never {
    let name = (error as? PortError)?.caseName ?? "other"
    say("ERROR \(name) \(error)")
    exit(1)
}

func serve(bind: String, port tcpPort: UInt16, plain: Bool, name: String?) throws {
    // SIGTERM ends the serving (awaitTermination below).
    blockTermination()
    let thread = LoopThread(name: "peer")
    try thread.start()
    let port = try Port(transport: .tcp(.listening(on: bind, port: tcpPort, security: plain ? .plainText : .curve)))
    port.setMessageHandler { message in
        do {
            switch message.msgid {
            case 2:
                if case let .port(target)? = message.components.first {
                    try target.send(msgid: 3, components: [.data(Data("via \(getpid())".utf8))], before: Date() + 5)
                }
                try message.replyPort?.send(msgid: 2, before: Date() + 5)
            case 3:
                say("GOT \(String(decoding: message.dataComponents.first ?? Data(), as: UTF8.self))")
            case 4:
                break
            default:
                if message.msgid == 1 { say("REQ \(String(decoding: message.dataComponents.first ?? Data(), as: UTF8.self))") }
                try message.replyPort?.send(msgid: message.msgid, components: message.components, before: Date() + 5)
            }
        } catch {
            say("HANDLER-ERROR \(error)")
        }
    }
    try port.schedule(on: thread)
    if let name { try PortNameServer.register(port, name: name) }
    say("PORT \(hex(port.descriptor))")
    say("PID \(getpid())")
    awaitTermination()
    port.invalidate()
    thread.stop()
}

func call(descriptor: String, count: Int, payload: String, pauseMilliseconds: UInt32) throws {
    let port = try Port.fromDescriptor(bytes(fromHex: descriptor))
    for index in 0..<count {
        if index > 0 && pauseMilliseconds > 0 { usleep(pauseMilliseconds * 1000) }
        let reply = try port.sendRequest(msgid: 1, components: [.data(Data("\(payload)\(index)".utf8))], sendTimeout: 10, receiveTimeout: 10)
        say("REPLY \(String(decoding: reply.dataComponents.first ?? Data(), as: UTF8.self))")
    }
    say("DONE")
}

func lookup(endpoint: String, serverKey: String, name: String) throws {
    let port = try PortNameServer.lookup(name, at: endpoint, server: .curve(publicKey: serverKey), timeout: .seconds(10))
    let reply = try port.sendRequest(msgid: 1, components: [.data(Data("looked-up".utf8))], sendTimeout: 10, receiveTimeout: 10)
    say("REPLY \(String(decoding: reply.dataComponents.first ?? Data(), as: UTF8.self))")
}

func exchange(descriptor: String, bind: String) throws {
    let remote = try Port.fromDescriptor(bytes(fromHex: descriptor))
    let thread = LoopThread(name: "exchange")
    try thread.start()
    let arrived = DispatchSemaphore(value: 0)
    let mine = try Port(transport: .tcp(.listening(on: bind)))
    mine.setMessageHandler { message in
        say("BACK \(String(decoding: message.dataComponents.first ?? Data(), as: UTF8.self))")
        arrived.signal()
    }
    try mine.schedule(on: thread)
    _ = try remote.sendRequest(msgid: 2, components: [.port(mine)], sendTimeout: 10, receiveTimeout: 10)
    guard arrived.wait(timeout: .now() + 20) == .success else { throw PortError.invalidPort("nothing came back to \(mine)") }
    thread.stop()
}

func pass(descriptor: String, other: String) throws {
    let remote = try Port.fromDescriptor(bytes(fromHex: descriptor))
    let passed = try Port.fromDescriptor(bytes(fromHex: other))
    _ = try remote.sendRequest(msgid: 2, components: [.port(passed)], sendTimeout: 10, receiveTimeout: 10)
    say("PASSED")
}

/// Sends blocks of `size` bytes, each starting with its index (UInt64,
/// little-endian), until one waits 0.2 s for room; with `stay`, then waits
/// for SIGTERM, so that what it accepted is all written before it exits.
func flood(descriptor: String, size: Int, stay: Bool) throws {
    let remote = try Port.fromDescriptor(bytes(fromHex: descriptor))
    _ = try remote.sendRequest(msgid: 1, sendTimeout: 10, receiveTimeout: 10)
    say("CONNECTED")
    let block = Data(repeating: 0x42, count: max(size, 8))
    var sent = 0
    while true {
        let numbered = numbered(block, sent)
        do {
            try remote.send(msgid: 5, components: [.data(numbered)], before: Date() + 0.2)
            sent += 1
        } catch .timedOut {
            break
        }
    }
    say("FULL \(sent)")
    guard stay else { return }
    awaitTermination()
}

/// Sends `count` 64-byte blocks, each starting with its index, as fast as
/// they are taken, then a request: its reply says that the port read them
/// all, and no more is sent meanwhile that could wake its reader.
func burst(descriptor: String, count: Int) throws {
    let remote = try Port.fromDescriptor(bytes(fromHex: descriptor))
    _ = try remote.sendRequest(msgid: 1, sendTimeout: 10, receiveTimeout: 10)
    let block = Data(repeating: 0x42, count: 64)
    for index in 0..<count { try remote.send(msgid: 5, components: [.data(numbered(block, index))], before: Date() + 10) }
    _ = try remote.sendRequest(msgid: 1, sendTimeout: 10, receiveTimeout: 30)
    say("DONE \(count)")
}

/// `block` with `index` (UInt64, little-endian) in its first 8 bytes.
func numbered(_ block: Data, _ index: Int) -> Data {
    var copy = block
    copy.withUnsafeMutableBytes { $0.storeBytes(of: UInt64(index).littleEndian, as: UInt64.self) }
    return copy
}

func hold(descriptor: String) throws {
    let remote = try Port.fromDescriptor(bytes(fromHex: descriptor))
    _ = try remote.sendRequest(msgid: 1, sendTimeout: 10, receiveTimeout: 10)
    say("WAITING")
    _ = try remote.sendRequest(msgid: 4, sendTimeout: 10, receiveTimeout: 120)
    say("ANSWERED")
}

/// Runs a client command on a LoopThread stopped before exit: a thread's
/// reply ports (and the last reply each kept) go with the thread, so that
/// nothing of a request is alive at exit (LeakSanitizer reads a live `Data`
/// of 15 bytes or more as a leak: docs/contributing.md).
func onWorker(_ body: @escaping @Sendable () throws -> Void) throws {
    let worker = LoopThread(name: "rlk-net-peer")
    try worker.start()
    defer { worker.stop() }
    try worker.performAndWait(body)
}

let arguments = CommandLine.arguments
do {
    switch arguments.count > 1 ? arguments[1] : "" {
    case "serve" where arguments.count >= 4:
        let options = Array(arguments.dropFirst(4))
        let name = options.firstIndex(of: "name").flatMap { $0 + 1 < options.count ? options[$0 + 1] : nil }
        try serve(bind: arguments[2], port: UInt16(arguments[3]) ?? 0, plain: options.first == "plain", name: name)
    case "lookup" where arguments.count >= 5:
        try onWorker { try lookup(endpoint: arguments[2], serverKey: arguments[3], name: arguments[4]) }
    case "exchange" where arguments.count >= 4:
        try onWorker { try exchange(descriptor: arguments[2], bind: arguments[3]) }
    case "pass" where arguments.count >= 4:
        try onWorker { try pass(descriptor: arguments[2], other: arguments[3]) }
    case "flood" where arguments.count >= 3:
        let size = arguments.count >= 4 ? Int(arguments[3]) ?? (64 << 10) : 64 << 10
        let stay = arguments.count >= 5 && arguments[4] == "stay"
        // Blocked before any thread starts, so that every thread leaves SIGTERM to awaitTermination.
        if stay { blockTermination() }
        try onWorker { try flood(descriptor: arguments[2], size: size, stay: stay) }
    case "burst" where arguments.count >= 4:
        try onWorker { try burst(descriptor: arguments[2], count: Int(arguments[3]) ?? 1) }
    case "hold" where arguments.count >= 3:
        try onWorker { try hold(descriptor: arguments[2]) }
    case "call" where arguments.count >= 4:
        let (descriptor, count) = (arguments[2], Int(arguments[3]) ?? 1)
        let (payload, pause) = (arguments.count > 4 ? arguments[4] : "", arguments.count > 5 ? UInt32(arguments[5]) ?? 0 : 0)
        try onWorker { try call(descriptor: descriptor, count: count, payload: payload, pauseMilliseconds: pause) }
    default:
        say("usage: rlk-net-peer serve <bind address> <port> [plain] | call <descriptor hex> <count> [payload] [pause ms]")
        exit(2)
    }
} catch {
    fail(error)
}
