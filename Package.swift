// swift-tools-version: 6.2
import PackageDescription

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
        .target(name: "ExclusionShims"),
        .target(name: "Exclusion", dependencies: ["ExclusionShims"]),
        .target(name: "Banking", dependencies: ["Exclusion", "SplitMix"]),
        // The one seeded random number generator, for simulations, scenarios and tests.
        .target(name: "SplitMix"),
        .target(
            name: "Documents",
            dependencies: ["Exclusion", "DocumentsXML", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // libxml2 behind a header of our own: its headers clash with Foundation's when imported into Swift.
        .target(name: "DocumentsXML", dependencies: ["CLibXML2"]),
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"]), .brew(["libxml2"])]
        ),
        .target(name: "ExclusionTesting", dependencies: ["SplitMix"]),
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
        .target(name: "ToolTesting", path: "Tests/ToolTesting"),
        // Threads started together, flags, barriers: one copy for every test target.
        .target(name: "ExclusionTestSupport", dependencies: ["Exclusion"], path: "Tests/ExclusionTestSupport"),
        // What the lock's tests read about a lock, and its broken variant, out of the shipped header.
        .target(name: "ExclusionLockTesting", dependencies: ["ExclusionShims"], path: "Tests/ExclusionLockTesting"),
        .testTarget(
            name: "ExclusionTests", dependencies: ["Exclusion", "ExclusionTestSupport", "ExclusionLockTesting"]),
        .testTarget(
            name: "BankingTests",
            dependencies: [
                "Banking", "bank", "ExclusionTesting", "ExclusionTestSupport", "SplitMix", "ToolTesting",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "DocumentsTests",
            dependencies: [
                "Documents", "docs", "ExclusionTesting", "ExclusionTestSupport", "ToolTesting",
                .product(name: "PropertyBased", package: "swift-property-based"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(name: "ExclusionTestingTests", dependencies: ["ExclusionTesting", "Exclusion"]),
    ],
    swiftLanguageModes: [.v6]
)
