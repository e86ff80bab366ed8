// swift-tools-version:6.0
// RunLoopKit: CFRunLoop / NSRunLoop semantics and NSMachPort-like ports for Linux.
import PackageDescription

/// Every example is an executable target in Examples/<name>, built by `swift build`.
let examples = [
    "keepalive", "common-modes", "observer-log", "custom-source", "lag-monitor",
    "keepalive-churn", "foundation-interop", "pingpong", "ipc-demo",
]

let package = Package(
    name: "RunLoopKit",
    products: [
        .library(name: "RunLoopKit", targets: ["RunLoopKit"]),
        .library(name: "ZeroMQ", targets: ["ZeroMQ"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CZeroMQ",
            path: "Sources/CZeroMQ",
            pkgConfig: "libzmq",
            providers: [.apt(["libzmq3-dev"])]
        ),
        .target(name: "CLinuxSupport", path: "Sources/CLinuxSupport"),
        .target(name: "ZeroMQ", dependencies: ["CZeroMQ", "CLinuxSupport"]),
        .target(
            name: "RunLoopKit",
            dependencies: [
                "ZeroMQ", "CLinuxSupport",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "ZeroMQTests", dependencies: ["ZeroMQ"]),
        .testTarget(name: "RunLoopKitTests", dependencies: ["RunLoopKit", "ZeroMQ", "CLinuxSupport"]),
        .executableTarget(
            name: "portsniff",
            dependencies: [
                "RunLoopKit", "ZeroMQ",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Tools/portsniff"
        ),
    ] + examples.map { name in
        .executableTarget(
            name: name,
            dependencies: ["RunLoopKit", .product(name: "Logging", package: "swift-log")],
            path: "Examples/\(name)"
        )
    },
    swiftLanguageModes: [.v6]
)
