// metrics: RunLoopKit's figures in Prometheus. swift-metrics is bootstrapped
// with swift-prometheus's factory, as a service does at start-up;
// `RunLoopKitMetrics.start()` reports what the ports and loops count. A
// LoopThread serves a port registered as "orders"; the program sends it
// orders, asks it one question (its reply port is unnamed: all reply ports
// share one series), and sends one message to a port with no handler set
// (a drop, by reason). Then it prints the exposition text a Prometheus
// server would scrape, RunLoopKit's lines only (docs/metrics.md lists them).
//
//   swift run metrics [--orders N]     (default 1000)
import Dispatch
import Glibc
import CoreMetrics
import Prometheus
import RunLoopKit
import RunLoopKitMetrics

func parseOrders() -> Int {
    var arguments = CommandLine.arguments.dropFirst()
    guard let flag = arguments.popFirst() else { return 1000 }
    guard flag == "--orders", let value = arguments.popFirst().flatMap(Int.init), value > 0, arguments.isEmpty else {
        print("usage: metrics [--orders N]")
        exit(2)
    }
    return value
}

/// Runs the kitchen and returns what Prometheus would scrape.
func run(orders: Int) throws -> String {
    let registry = PrometheusCollectorRegistry()
    MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
    RunLoopKitMetrics.start()

    let kitchen = LoopThread(name: "kitchen")
    try kitchen.start()
    defer { kitchen.stop() }

    let served = DispatchSemaphore(value: 0)
    let ordersPort = try Port(transport: .ipc)
    try PortNameServer.register(ordersPort, name: "orders")
    defer { PortNameServer.unregister("orders") }
    ordersPort.setMessageHandler { message in
        if let reply = message.replyPort {
            try? reply.send(msgid: message.msgid, components: [.data(Data("open".utf8))], before: Date() + 5)
        } else {
            served.signal()
        }
    }
    try ordersPort.schedule(on: kitchen)

    // A port no one set a handler for: what it is sent is dropped and counted.
    let unattended = try Port(transport: .inproc)
    try unattended.schedule(on: kitchen)

    let counter = try PortNameServer.lookup("orders")
    for number in 0..<orders {
        try counter.send(msgid: 1, components: [.data(Data("order \(number)".utf8))], before: Date() + 5)
    }
    for _ in 0..<orders { served.wait() }

    let answer = try counter.sendRequest(msgid: 2, sendTimeout: 5, receiveTimeout: 5)
    print("the kitchen says: \(answer.dataComponents.first.map { String(decoding: $0, as: UTF8.self) } ?? "?")")

    try unattended.send(msgid: 9, before: Date() + 5)
    // The drop is counted on the kitchen's thread, when it reads the port.
    let deadline = Date() + 5
    while unattended.droppedMessageCount == 0 && Date() < deadline { usleep(1_000) }
    return registry.emitToString()
}

let text = try run(orders: parseOrders())
// Only RunLoopKit's families, and not its loops' lag histogram buckets, to keep it short.
for line in text.split(separator: "\n") where line.contains("runloopkit_") && !line.contains("_bucket") {
    print(line)
}
