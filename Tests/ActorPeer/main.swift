// rlk-actor-peer: one end of a distributed actor's calls over tcp (issue
// 43), run by PortActorSystemHostsTests inside network-namespace hosts (on
// loopback where they cannot be made). Both ends are this program, so that
// they share the actor's declaration and the types its calls carry.
//
//   rlk-actor-peer serve <bind address> <tcp port> <name> <generation>
//       A tcp PortActorSystem listening at <bind address>:<tcp port>, and a
//       `Scale` (of <generation>) pinned to the LoopThread "scale-worker",
//       registered under <name>. Prints "CALLPORT <its system's call port
//       descriptor, hex>", "ACTOR <its number>" and "READY", then serves
//       until SIGTERM (at most two minutes). Each call it serves is printed
//       as "CALL <function>"; `hang` prints "HANGING" and waits for an hour.
//   rlk-actor-peer call <bind address> <endpoint> <server public key> <name> <call port hex> <actor number> <go fifo | ->
//       A tcp PortActorSystem listening at <bind address>. Looks <name> up
//       at <endpoint> (the server's key given) and calls the actor it finds:
//       "FOUND", "REMOTE", "THREAD", "ECHO"; makes an ID of the call port's
//       descriptor and <actor number> and calls it ("BY-ADDRESS"); weighs a
//       parcel carrying a tcp port of its own, which the callee sends to
//       ("WEIGHED", "SAME-PORT", "YOURS-BACK", "RETURNED"); "ADD". Then
//       calls `hang` ("IN-FLIGHT") and prints how that call ended:
//       "HANG-FAILED <CLOCK_MONOTONIC ns when it failed> <outcome>", and a
//       later call's outcome, "OLD-AFTER-DEATH <outcome>". With a fifo,
//       waits for a line on it (the actor's process restarted), looks the
//       name up again ("FOUND-AGAIN", "ADD-AGAIN") and calls the old
//       reference ("OLD-AFTER-RESTART"). Prints "DONE", exits 0; an error
//       out of order is "ERROR <outcome>", exit 1.
//       An outcome is "answered <value>", "transport <PortError case>
//       <error>" (PortActorSystemError.transport), or "other <error>".
import Dispatch
import Distributed
import Glibc
import NetworkPeerSupport
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitCore
import RunLoopKitDistributed
import RunLoopKitPorts

func monotonicNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// Arguments and results of several Codable types, ports among them.
struct Parcel: Codable, Sendable, Equatable {
    var label: String
    var weights: [Double]
    var returnTo: Port
    var copies: [String: [Port]]
}

distributed actor Scale {
    typealias ActorSystem = PortActorSystem

    let generation: Int

    init(generation: Int, worker: LoopThread, actorSystem: PortActorSystem) {
        self.generation = generation
        self.actorSystem = actorSystem
        actorSystem.pin(id, to: worker)
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { actorSystem.executor(for: id) }

    distributed func whichGeneration() -> Int {
        say("CALL whichGeneration")
        return generation
    }

    /// The name of the LoopThread the call runs on.
    distributed func threadName() -> String {
        say("CALL threadName")
        return LoopThread.currentName ?? "not a LoopThread"
    }

    distributed func echo<T: Codable & Sendable>(_ value: T) -> T {
        say("CALL echo")
        return value
    }

    /// Sends "via generation N" to the parcel's `returnTo` (msgid 3), then
    /// returns the parcel, its label saying whether the port under "yours"
    /// arrived as this system's own call port.
    distributed func weigh(_ parcel: Parcel) throws -> Parcel {
        say("CALL weigh")
        try parcel.returnTo.send(msgid: 3, components: [.data(Data("via generation \(generation)".utf8))], before: Date() + 10)
        var weighed = parcel
        let own = parcel.copies["yours"]?.first === actorSystem.callPort
        weighed.label += " (weighed by generation \(generation), own port: \(own))"
        return weighed
    }

    distributed func add(_ a: Int, _ b: Int) -> Int {
        say("CALL add")
        return a + b
    }

    /// Waits an hour: a call in flight when its process dies.
    distributed func hang() async throws {
        say("CALL hang")
        say("HANGING")
        try await Task.sleep(for: .seconds(3_600))
    }
}

func serve(bind: String, port: UInt16, name: String, generation: Int) throws {
    // SIGTERM ends the serving (awaitTermination below).
    blockTermination()
    let worker = LoopThread(name: "scale-worker")
    try worker.start()
    let system = try PortActorSystem(transport: .tcp(.listening(on: bind, port: port)), name: "actors-served")
    let scale = Scale(generation: generation, worker: worker, actorSystem: system)
    try system.register(scale, name: name)
    say("CALLPORT \(hex(system.callPort.descriptor))")
    say("ACTOR \(scale.id.number)")
    say("READY")
    awaitTermination()
    withExtendedLifetime(scale) {}
    system.shutdown()
    worker.stop()
}

/// How a call ended, as one word and its details.
func outcome<T>(_ call: () async throws -> T) async -> String {
    do {
        return "answered \(try await call())"
    } catch {
        return describe(error)
    }
}

func describe(_ error: any Error) -> String {
    if case let .transport(portError)? = error as? PortActorSystemError {
        return "transport \(portError.caseName) \(portError)"
    }
    return "other \(error)"
}

/// A port of this process that counts what arrives (the callee's send to
/// the parcel's `returnTo`).
final class Inbox: Sendable {
    let port: Port
    let texts = Locked<[String]>([])
    let arrived = DispatchSemaphore(value: 0)

    init(bind: String, on thread: LoopThread) throws {
        port = try Port(transport: .tcp(.listening(on: bind)))
        port.setMessageHandler { [texts, arrived] message in
            texts.withLock { $0.append(String(decoding: message.dataComponents.first ?? Data(), as: UTF8.self)) }
            arrived.signal()
        }
        try port.schedule(on: thread)
    }
}

struct Arguments: Sendable {
    let bind: String, endpoint: String, serverKey: String, name: String, callPort: String, number: UInt64, go: String
}

func call(_ arguments: Arguments, driver: LoopThread) async throws {
    let system = try PortActorSystem(transport: .tcp(.listening(on: arguments.bind)), name: "actors-calling")
    defer { system.shutdown() }
    let server = PortNameServer.ServerIdentity.curve(publicKey: arguments.serverKey)
    let named = try await system.lookup(arguments.name, at: arguments.endpoint, server: server, as: Scale.self, timeout: .seconds(10))
    say("FOUND \(try await named.whichGeneration())")
    say("REMOTE \(__isRemoteActor(named))")
    say("THREAD \(try await named.threadName())")
    let echoed = try await named.echo(["kg": [1.5, 2.25]])
    say("ECHO \(echoed == ["kg": [1.5, 2.25]])")

    // An ID made of the call port's address (its descriptor) and the number.
    let byAddress = try Scale.resolve(
        id: PortActorID(system: try Port.fromDescriptor(bytes(fromHex: arguments.callPort)), number: arguments.number), using: system)
    say("BY-ADDRESS \(try await byAddress.whichGeneration()) same-id=\(byAddress.id == named.id)")

    let inboxThread = LoopThread(name: "inbox")
    try inboxThread.start()
    defer { inboxThread.stop() }
    let inbox = try Inbox(bind: arguments.bind, on: inboxThread)
    defer { inbox.port.invalidate() }
    let parcel = Parcel(label: "crate", weights: [1.5, 2.25], returnTo: inbox.port,
                        copies: ["mine": [inbox.port], "yours": [named.id.system]])
    let weighed = try await named.weigh(parcel)
    say("WEIGHED \(weighed.label) weights=\(weighed.weights)")
    say("SAME-PORT \(weighed.returnTo === inbox.port && weighed.copies["mine"]?.first === inbox.port)")
    say("YOURS-BACK \(weighed.copies["yours"]?.first == named.id.system)")
    let returned = inbox.arrived.wait(timeout: .now() + 30) == .success
    say("RETURNED \(returned ? inbox.texts.withLock { $0.joined(separator: ",") } : "nothing")")
    say("ADD \(try await named.add(40, 2))")

    // A call in flight when the actor's process (or its host) dies.
    let hang = Task(executorPreference: driver) {
        try await PortActorSystem.$callTimeout.withValue(.seconds(120)) { try await named.hang() }
    }
    say("IN-FLIGHT")
    let ended: String
    do {
        try await hang.value
        ended = "answered"
    } catch {
        ended = describe(error)
    }
    say("HANG-FAILED \(monotonicNanoseconds()) \(ended)")
    say("OLD-AFTER-DEATH \(await outcome { try await named.add(1, 1) })")
    guard arguments.go != "-" else {
        say("DONE")
        return
    }

    // The test restarts the actor's process, then says so on the fifo.
    let fd = open(arguments.go, O_RDONLY)
    guard fd >= 0 else { throw PortError.invalidPort("cannot open \(arguments.go): errno \(errno)") }
    var byte: UInt8 = 0
    let count = read(fd, &byte, 1)
    close(fd)
    guard count == 1 else { throw PortError.invalidPort("nothing on \(arguments.go)") }
    let again = try await system.lookup(arguments.name, at: arguments.endpoint, server: server, as: Scale.self, timeout: .seconds(10))
    say("FOUND-AGAIN \(try await again.whichGeneration()) new-system=\(again.id.system != named.id.system)")
    say("ADD-AGAIN \(try await again.add(2, 3))")
    say("OLD-AFTER-RESTART \(await outcome { try await named.add(1, 1) })")
    say("OLD-BY-ADDRESS-AFTER-RESTART \(await outcome { try await byAddress.whichGeneration() })")
    say("DONE")
}

let commandLine = CommandLine.arguments
switch commandLine.count > 1 ? commandLine[1] : "" {
case "serve" where commandLine.count >= 6:
    do {
        try serve(bind: commandLine[2], port: UInt16(commandLine[3]) ?? 0, name: commandLine[4], generation: Int(commandLine[5]) ?? 0)
    } catch {
        say("ERROR \(describe(error))")
        exit(1)
    }
case "call" where commandLine.count >= 9:
    let arguments = Arguments(bind: commandLine[2], endpoint: commandLine[3], serverKey: commandLine[4], name: commandLine[5],
                              callPort: commandLine[6], number: UInt64(commandLine[7]) ?? 0, go: commandLine[8])
    // The calls run on a LoopThread of their own, not Swift's global pool.
    let driver = LoopThread(name: "caller")
    do { try driver.start() } catch {
        say("ERROR \(describe(error))")
        exit(1)
    }
    let finished = DispatchSemaphore(value: 0)
    let failed = Locked(false)
    Task(executorPreference: driver) {
        do {
            try await call(arguments, driver: driver)
        } catch {
            say("ERROR \(describe(error))")
            failed.withLock { $0 = true }
        }
        finished.signal()
    }
    finished.wait()
    driver.stop()
    exit(failed.withLock { $0 } ? 1 : 0)
default:
    say("usage: rlk-actor-peer serve <bind address> <tcp port> <name> <generation> | call <bind address> <endpoint> <server key> <name> <call port hex> <actor number> <go fifo | ->")
    exit(2)
}
