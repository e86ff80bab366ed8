// swift-tools-version:6.2
// rlk-soak: RunLoopKit under a long, randomised load (LoopThreads and ports
// between threads and processes, with stops, invalidations, kills), checking
// that no message is lost, duplicated or reordered and that nothing leaks.
// Its own package: swift-subprocess needs tools version 6.2, and the root
// package promises Swift 6.0.
//
//   swift run -c release rlk-soak --seconds 60      # what CI runs
//   ../scripts/soak.sh 1800                         # the 30-minute soak
import PackageDescription

/// SwiftPM names a path dependency after its directory, so the root
/// package's identity is whatever the checkout directory is called.
let rootIdentity = String(Context.packageDirectory.split(separator: "/").dropLast().last ?? "RunLoopKit")

let package = Package(
    name: "RunLoopKitSoak",
    dependencies: [
        .package(path: ".."),
        // No traits: the Foundation trait would link Foundation, whose
        // RunLoop and Port clash with RunLoopKit's names.
        .package(url: "https://github.com/swiftlang/swift-subprocess", from: "1.0.2", traits: []),
        // FilePath, to name the executable swift-subprocess spawns.
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        // glibc's malloc_trim and mallinfo2 (malloc.h), which Glibc's module
        // does not export: the resource samples read the heap through them.
        .target(name: "CMallocInfo", path: "Sources/CMallocInfo"),
        .executableTarget(
            name: "rlk-soak",
            dependencies: [
                "CMallocInfo",
                .product(name: "RunLoopKit", package: rootIdentity),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ],
            path: "Sources/rlk-soak"
        ),
    ],
    swiftLanguageModes: [.v6]
)
