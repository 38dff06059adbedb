// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Exclusion",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "Exclusion", targets: ["Exclusion"])
    ],
    dependencies: [
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0")
    ],
    targets: [
        // Libraries
        .target(name: "ExclusionShims"),
        .target(name: "Exclusion", dependencies: ["ExclusionShims"]),

        // Tests
        .testTarget(name: "ExclusionTests", dependencies: ["Exclusion"]),
    ],
    swiftLanguageModes: [.v6]
)
