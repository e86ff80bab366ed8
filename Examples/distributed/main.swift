// distributed: a distributed actor whose calls are port messages. A
// kitchen serves a `Kitchen` actor on a LoopThread of its own, registered
// under a name; a diner's system looks the name up and calls the actor's
// `distributed func`s: values in, values out, a typed error, and a call it
// gives up on. Two systems in one process, over ipc ports: the same calls
// work from another process, or another host over tcp
// (docs/distributed-actors.md). Run under the sniffer to see each call and
// its reply by method: `portsniff -- .build/debug/distributed`.
import Distributed
import Glibc
import RunLoopKit
import RunLoopKitDistributed

struct Order: Codable, Sendable {
    var dish: String
    var table: Int
}

struct Ticket: Codable, Sendable, CustomStringConvertible {
    var number: Int
    var dish: String
    var description: String { "ticket \(number): \(dish)" }
}

enum KitchenError: Error, Codable {
    case soldOut(String)
}

/// What the kitchen tells the program (its cancelled calls).
let (kitchenLog, kitchenNotes) = AsyncStream<String>.makeStream()

distributed actor Kitchen {
    typealias ActorSystem = PortActorSystem
    private var tickets = 0

    init(on thread: LoopThread, actorSystem: PortActorSystem) {
        self.actorSystem = actorSystem
        actorSystem.pin(id, to: thread)
    }

    // Every call, from wherever it comes, runs on the kitchen's thread.
    nonisolated var unownedExecutor: UnownedSerialExecutor { actorSystem.executor(for: id) }

    distributed func take(_ order: Order) throws -> Ticket {
        guard order.dish != "soufflé" else { throw KitchenError.soldOut(order.dish) }
        tickets += 1
        return Ticket(number: tickets, dish: "\(order.dish) for table \(order.table) (cooked on \(LoopThread.currentName ?? "?"))")
    }

    /// Takes its time; a diner who stops waiting cancels it.
    distributed func slowRoast() async throws -> String {
        do {
            try await Task.sleep(for: .seconds(60))
        } catch {
            kitchenNotes.yield("slowRoast() was cancelled in the kitchen")
            throw error
        }
        return "roast"
    }
}

/// An order the kitchen cannot make: its error arrives as itself (the diner's
/// system allows the type). A function, so that its message is released
/// before the program exits: LeakSanitizer misreads a String still held in
/// top-level code's frame at exit (docs/contributing.md).
func orderWhatIsSoldOut(from remote: Kitchen) async throws {
    do {
        _ = try await remote.take(Order(dish: "soufflé", table: 9))
    } catch let KitchenError.soldOut(dish) {
        print("typed error: \(dish) is sold out")
    }
}

var count = 3
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    if argument == "--count", let value = arguments.popFirst().flatMap({ Int($0) }), value > 0 {
        count = value
    } else {
        print("usage: distributed [--count N]   (N orders; default 3)")
        exit(2)
    }
}

let kitchenThread = LoopThread(name: "kitchen")
try kitchenThread.start()
let kitchenSystem = try PortActorSystem(name: "kitchen-system")
let dinerSystem = try PortActorSystem(name: "diner-system")
dinerSystem.allowErrorType(KitchenError.self)

let kitchen = Kitchen(on: kitchenThread, actorSystem: kitchenSystem)
// A name of this process's runtime directory; another process finds it the same way.
let name = "example.kitchen.\(getpid())"
try kitchenSystem.register(kitchen, name: name)

let remote = try await dinerSystem.lookup(name, as: Kitchen.self)
for table in 1...count {
    let ticket = try await remote.take(Order(dish: "soup", table: table))
    print(ticket)
}
try await orderWhatIsSoldOut(from: remote)
// A call the diner stops waiting for: the kitchen's task is cancelled too.
do {
    _ = try await PortActorSystem.$callTimeout.withValue(.milliseconds(200)) { try await remote.slowRoast() }
} catch PortActorSystemError.deadlineExceeded {
    print("gave up on slowRoast() after 200 ms")
}
for await note in kitchenLog {
    print(note)
    break
}
kitchenSystem.shutdown()
dinerSystem.shutdown()
kitchenThread.stop()
print("done")
