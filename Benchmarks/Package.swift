// swift-tools-version:6.0
// rlk-bench: RunLoopKit side by side with its peers (raw libzmq, the OS
// floor, SwiftNIO, Foundation, Dispatch). Its own package, so that building
// or testing RunLoopKit never pulls in SwiftNIO.
//
//   swift run -c release rlk-bench            # the full run (docs/performance.md)
//   swift run -c release rlk-bench --quick    # under a minute, as CI runs it
import PackageDescription

/// SwiftPM names a path dependency after its directory, so the root
/// package's identity is whatever the checkout directory is called.
let rootIdentity = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "RunLoopKit")

let package = Package(
    name: "RunLoopKitBenchmarks",
    dependencies: [
        .package(path: ".."),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // libzmq for the C peers; the root's CZeroMQ is not a product. No
        // `pkgConfig:`, for the same reason as the root's CZeroMQ.
        .systemLibrary(
            name: "CLibZMQ",
            path: "Sources/CLibZMQ",
            providers: [.apt(["libzmq3-dev"])]
        ),
        // Raw libzmq, eventfd and pthread peers, and the Linux calls the Swift side needs.
        .target(name: "CBenchPeers", dependencies: ["CLibZMQ"], path: "Sources/CBenchPeers"),
        .executableTarget(
            name: "rlk-bench",
            dependencies: [
                "CBenchPeers",
                .product(name: "RunLoopKit", package: rootIdentity),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Sources/rlk-bench"
        ),
    ],
    swiftLanguageModes: [.v6]
)
