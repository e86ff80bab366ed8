// swift-tools-version:6.2
// RunLoopKit: CFRunLoop / NSRunLoop semantics and NSMachPort-like ports for Linux.
import PackageDescription

/// Every example is an executable target in Examples/<name>, built by `swift build`.
let examples = [
    "keepalive", "common-modes", "observer-log", "custom-source", "lag-monitor",
    "keepalive-churn", "foundation-interop", "pingpong", "ipc-demo", "actors", "cluster", "distributed", "metrics",
    "graceful-shutdown",
]

/// Examples that need more than the umbrella: a product each.
let exampleProducts: [String: [Target.Dependency]] = [
    "distributed": ["RunLoopKitDistributed"],
    "metrics": [
        "RunLoopKitMetrics", .product(name: "CoreMetrics", package: "swift-metrics"),
        .product(name: "Prometheus", package: "swift-prometheus"),
    ],
    "graceful-shutdown": ["RunLoopKitLifecycle", .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")],
]

let package = Package(
    name: "RunLoopKit",
    products: [
        // What users import: the umbrella (the core and the ports), the
        // testing module for their test targets, and the ZeroMQ layer.
        // The umbrella and the two modules it re-exports: the product's
        // targets are what the public-API guard compares with the last
        // release (scripts/check-api-breaks.sh), and a re-export alone
        // would leave Core and Ports out of it.
        .library(name: "RunLoopKit", targets: ["RunLoopKit", "RunLoopKitCore", "RunLoopKitPorts"]),
        .library(name: "RunLoopKitTesting", targets: ["RunLoopKitTesting"]),
        .library(name: "ZeroMQ", targets: ["ZeroMQ"]),
        // Distributed actors over ports: a product of its own, so that a
        // user who needs none links none of it (nor Swift's Distributed).
        .library(name: "RunLoopKitDistributed", targets: ["RunLoopKitDistributed"]),
        // The ecosystem's bridges, a product each for the same reason:
        // RunLoopKit's figures in swift-metrics; LoopThreads and the
        // ports' flush as swift-service-lifecycle services.
        .library(name: "RunLoopKitMetrics", targets: ["RunLoopKitMetrics"]),
        .library(name: "RunLoopKitLifecycle", targets: ["RunLoopKitLifecycle"]),
        .library(name: "RunLoopKitTracing", targets: ["RunLoopKitTracing"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        // For the metrics example only (the exposition text Prometheus scrapes).
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    ],
    targets: [
        // No `pkgConfig:`: Debian's libzmq.pc adds `-isystem /usr/include/mit-krb5`,
        // which SwiftPM refuses with a warning in every client's build. zmq.h and
        // libzmq.so sit in the default paths on Debian and most systems; for an
        // install elsewhere, see README ("libzmq somewhere else").
        .systemLibrary(
            name: "CZeroMQ",
            path: "Sources/CZeroMQ",
            providers: [.apt(["libzmq3-dev"])]
        ),
        .target(name: "CLinuxSupport", path: "Sources/CLinuxSupport"),
        .target(name: "ZeroMQ", dependencies: ["CZeroMQ", "CLinuxSupport"]),
        // The modules (docs/design.md, "Modules"): the run-loop core, the
        // ports on top of it, the testing module beside them, and the
        // umbrella that re-exports the core and the ports. The core never
        // imports the ports; what the ports need of it is `package`.
        .target(
            name: "RunLoopKitCore",
            dependencies: [
                "ZeroMQ", "CLinuxSupport",
                .product(name: "Logging", package: "swift-log"),
                // A loop's queue of blocks and jobs is a Deque (BlockQueue).
                .product(name: "DequeModule", package: "swift-collections"),
            ]
        ),
        .target(
            name: "RunLoopKitPorts",
            dependencies: [
                "RunLoopKitCore", "ZeroMQ", "CLinuxSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "RunLoopKit", dependencies: ["RunLoopKitCore", "RunLoopKitPorts"]),
        .target(name: "RunLoopKitDistributed", dependencies: ["RunLoopKitCore", "RunLoopKitPorts"]),
        // What the core and the ports count, reported to swift-metrics.
        .target(
            name: "RunLoopKitMetrics",
            dependencies: ["RunLoopKitCore", "RunLoopKitPorts", .product(name: "CoreMetrics", package: "swift-metrics")]
        ),
        .target(name: "RunLoopKitTesting", dependencies: ["RunLoopKitCore"]),
        // A test target per module, and one for portsniff; the helpers they
        // share (threads and programs made for a test, probes of /proc, the
        // files a test leaves, hosts made of network namespaces and the
        // keys of the processes on them) are a target of their own.
        .target(
            name: "RunLoopKitTestSupport",
            dependencies: ["RunLoopKit", "RunLoopKitPorts", "RunLoopKitTesting", "CLinuxSupport", "ZeroMQ", "NetworkPeerSupport"],
            path: "Tests/RunLoopKitTestSupport"
        ),
        .testTarget(name: "ZeroMQTests", dependencies: ["ZeroMQ", "RunLoopKitTestSupport"]),
        .testTarget(
            name: "RunLoopKitCoreTests",
            dependencies: [
                "RunLoopKitCore", "RunLoopKitTesting", "RunLoopKitTestSupport", "ZeroMQ", "CLinuxSupport",
                "main-loop-checks",
            ]
        ),
        // RunLoop.main on the main thread of a program with a synchronous
        // main (the test runner parks its own in dispatch_main): the
        // checks MainLoopTests starts and reads.
        .executableTarget(name: "main-loop-checks", dependencies: ["RunLoopKit"], path: "Tests/MainLoopChecks"),
        .testTarget(
            name: "RunLoopKitPortsTests",
            dependencies: [
                "RunLoopKit", "RunLoopKitCore", "RunLoopKitPorts", "RunLoopKitTestSupport", "ZeroMQ", "CLinuxSupport",
                "rlk-net-peer",
            ]
        ),
        // One RunLoopKit process at one end of a tcp test: run by the
        // network tests on loopback and inside network-namespace hosts.
        .executableTarget(name: "rlk-net-peer", dependencies: ["RunLoopKit", "RunLoopKitPorts", "NetworkPeerSupport"], path: "Tests/NetworkPeer"),
        .testTarget(
            name: "RunLoopKitDistributedTests",
            dependencies: [
                "RunLoopKit", "RunLoopKitCore", "RunLoopKitDistributed", "RunLoopKitPorts", "RunLoopKitTestSupport",
                "rlk-actor-peer",
            ]
        ),
        // A process serving or calling a distributed actor over tcp: run by
        // the distributed tests inside network-namespace hosts (or on
        // loopback where they cannot be made).
        .executableTarget(
            name: "rlk-actor-peer",
            dependencies: ["RunLoopKit", "RunLoopKitCore", "RunLoopKitDistributed", "RunLoopKitPorts", "NetworkPeerSupport"],
            path: "Tests/ActorPeer"
        ),
        // What rlk-net-peer, rlk-actor-peer and the tests that run them
        // share: the lines the programs print, descriptors as hex.
        .target(name: "NetworkPeerSupport", path: "Tests/NetworkPeerSupport"),
        .testTarget(
            name: "RunLoopKitMetricsTests",
            dependencies: [
                "RunLoopKit", "RunLoopKitCore", "RunLoopKitPorts", "RunLoopKitMetrics", "RunLoopKitTestSupport",
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                // The tcp peer of the connection figures, and the example its test runs.
                "rlk-net-peer", "metrics",
            ]
        ),
        // LoopThreads and the ports' flush as swift-service-lifecycle services.
        .target(
            name: "RunLoopKitLifecycle",
            dependencies: [
                "RunLoopKitCore", "RunLoopKitPorts",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "RunLoopKitLifecycleTests",
            dependencies: [
                "RunLoopKit", "RunLoopKitPorts", "RunLoopKitLifecycle", "RunLoopKitTestSupport",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                // The tcp peer the flush sends to, and the example its test runs.
                "rlk-net-peer", "graceful-shutdown",
            ]
        ),
        // W3C trace context through ports, for swift-distributed-tracing.
        .target(
            name: "RunLoopKitTracing",
            dependencies: [
                "RunLoopKitCore", "RunLoopKitPorts",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
            ]
        ),
        .testTarget(
            name: "RunLoopKitTracingTests",
            dependencies: [
                "RunLoopKit", "RunLoopKitPorts", "RunLoopKitTracing", "RunLoopKitDistributed", "RunLoopKitTestSupport",
                "TracingTestSupport", "NetworkPeerSupport",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                // The process at the other end of the ipc and tcp hops.
                "rlk-trace-peer",
            ]
        ),
        // The tests' tracer: swift-distributed-tracing's in-memory one,
        // propagating W3C's headers as OpenTelemetry's does.
        .target(
            name: "TracingTestSupport",
            dependencies: [
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            path: "Tests/TracingTestSupport"
        ),
        // A traced process serving a port over ipc or tcp: prints the trace
        // each message's handler ran in.
        .executableTarget(
            name: "rlk-trace-peer",
            dependencies: ["RunLoopKit", "RunLoopKitPorts", "RunLoopKitTracing", "TracingTestSupport", "NetworkPeerSupport",
                           .product(name: "Tracing", package: "swift-distributed-tracing")],
            path: "Tests/TracePeer"
        ),
        .testTarget(
            name: "RunLoopKitTestingTests",
            dependencies: ["RunLoopKitCore", "RunLoopKitTesting", "RunLoopKitTestSupport"]
        ),
        // portsniff's tests run the built program, as a user does (swift
        // build first; scripts/test.sh does), and read what it prints.
        .testTarget(name: "PortSniffTests", dependencies: ["RunLoopKit", "RunLoopKitTestSupport"]),
        .executableTarget(
            name: "portsniff",
            dependencies: [
                "RunLoopKit",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/portsniff"
        ),
        // The wire fuzzer: libFuzzer's entry into the production decoders
        // (`WireFuzzing`, a package entry). Built and run by
        // scripts/fuzz.sh (docs/fuzzing.md); a plain build makes a program
        // that does nothing.
        .executableTarget(name: "wire-fuzz", dependencies: ["RunLoopKitPorts"], path: "Tools/wire-fuzz"),
    ] + examples.map { name in
        .executableTarget(
            name: name,
            dependencies: ["RunLoopKit", .product(name: "Logging", package: "swift-log")]
                + (exampleProducts[name] ?? []),
            path: "Examples/\(name)"
        )
    },
    swiftLanguageModes: [.v6]
)

// The DocC plugin only when building the manual (scripts/docs.sh sets
// RLK_DOCS=1), so that ordinary builds, tests and clients never fetch it.
if Context.environment["RLK_DOCS"] != nil {
    package.dependencies.append(.package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"))
}

// The public-API guard (scripts/check-api-breaks.sh sets RLK_API_CHECK=1)
// compares the library products' modules only, and builds this manifest at
// the last release's commit as well: without the examples, tools and tests,
// which would only lengthen both builds.
if Context.environment["RLK_API_CHECK"] != nil {
    package.targets.removeAll { $0.type == .executable || $0.type == .test }
}
