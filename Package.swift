// swift-tools-version: 6.3
import PackageDescription

// Swift 6.3 (Xcode 26.4) is the oldest compiler that builds everything here: the awaited accessors
// need 6.2's `nonisolated(nonsending)`, and the exit tests capture values, which came in 6.3.

/// Where a test may start a process: exit tests (`#expect(processExitsWith:)`) and Foundation's
/// `Process` exist on macOS and Linux, not on iOS. Tests that need one are compiled only where
/// `CHILD_PROCESSES` is set, and the rest run everywhere. `EXCLUSION_NO_CHILD_PROCESSES=1` leaves it
/// unset here too, to build and run the tests as iOS gets them.
let childProcessPlatforms: [Platform] = [.macOS, .linux]
let testSettings: [SwiftSetting] =
    Context.environment["EXCLUSION_NO_CHILD_PROCESSES"] == nil
    ? [.define("CHILD_PROCESSES", .when(platforms: childProcessPlatforms))] : []
/// Apple's platforms, whose SDKs carry libxml2.
let applePlatforms: [Platform] = [.macOS, .iOS, .tvOS, .watchOS, .visionOS, .macCatalyst]

let package = Package(
    name: "Exclusion",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "Exclusion", targets: ["Exclusion"]),
        .library(name: "Banking", targets: ["Banking"]),
        .library(name: "Documents", targets: ["Documents"]),
        .library(name: "ExclusionTesting", targets: ["ExclusionTesting"]),
        .executable(name: "bank", targets: ["bank"]),
        .executable(name: "docs", targets: ["docs"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.1"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // Libraries
        // zlib (for the contention profile's gzip) is linked where the SDK has it; Linux loads it.
        .target(name: "ExclusionShims", linkerSettings: [.linkedLibrary("z", .when(platforms: applePlatforms))]),
        // Internal/README.md is the map of the engine, for its readers, not part of the build.
        .target(name: "Exclusion", dependencies: ["ExclusionShims"], exclude: ["Internal/README.md"]),
        .target(name: "Banking", dependencies: ["Exclusion", "SplitMix"]),
        // The one seeded random number generator, for simulations, scenarios and tests.
        .target(name: "SplitMix"),
        .target(
            name: "Documents",
            dependencies: ["Exclusion", "DocumentsXML", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // libxml2 behind a header of our own: its headers clash with Foundation's when imported into Swift.
        // On Apple platforms libxml2 is part of the SDK; elsewhere pkg-config finds it.
        .target(
            name: "DocumentsXML",
            dependencies: [.target(name: "CLibXML2", condition: .when(platforms: [.linux]))],
            linkerSettings: [.linkedLibrary("xml2", .when(platforms: applePlatforms))]
        ),
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"]), .brew(["libxml2"])]
        ),
        .target(name: "ExclusionTesting", dependencies: ["Exclusion", "SplitMix"]),
        // What the two tools share: output that fails politely, and a main that exits as Unix tools do.
        .target(
            name: "ToolSupport",
            dependencies: [
                "CToolSupport", "Exclusion", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .target(name: "CToolSupport"),

        // Tools
        .executableTarget(
            name: "bank",
            dependencies: [
                "Banking", "ToolSupport", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "docs",
            dependencies: [
                "Documents", "ToolSupport", .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        // The parsers' fuzz target (Fuzz/README.md); built plainly, it replays inputs.
        .executableTarget(name: "DocumentsFuzzer", dependencies: ["Documents"]),

        // Tests
        .target(name: "ToolTesting", dependencies: ["ExclusionTestSupport"], path: "Tests/ToolTesting"),
        // Threads started together, flags, barriers: one copy for every test target.
        .target(
            name: "ExclusionTestSupport", dependencies: ["Exclusion", "ExclusionTesting"],
            path: "Tests/ExclusionTestSupport",
            swiftSettings: testSettings
        ),
        // What the lock's tests read about a lock, and its broken variant, out of the shipped header.
        .target(name: "ExclusionLockTesting", dependencies: ["ExclusionShims"], path: "Tests/ExclusionLockTesting"),
        .testTarget(
            name: "ExclusionTests", dependencies: ["Exclusion", "ExclusionTestSupport", "ExclusionLockTesting"],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "BankingTests",
            dependencies: [
                "Banking", "ExclusionTesting", "ExclusionTestSupport", "SplitMix",
                // The tool and what runs it, where a test can start a process.
                .target(name: "bank", condition: .when(platforms: childProcessPlatforms)),
                .target(name: "ToolTesting", condition: .when(platforms: childProcessPlatforms)),
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "DocumentsTests",
            dependencies: [
                "Documents", "ExclusionTesting", "ExclusionTestSupport",
                .target(name: "docs", condition: .when(platforms: childProcessPlatforms)),
                .target(name: "ToolTesting", condition: .when(platforms: childProcessPlatforms)),
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: testSettings
        ),
        .testTarget(
            name: "ExclusionTestingTests",
            dependencies: ["ExclusionTesting", "Exclusion", "ExclusionTestSupport", "SplitMix"],
            swiftSettings: testSettings),
    ],
    swiftLanguageModes: [.v6]
)
