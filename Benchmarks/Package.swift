// swift-tools-version: 6.2
import PackageDescription

// Benchmarks live in their own package so the library doesn't depend on the benchmark harness.
// Run from this folder: `swift package benchmark` (or `python3 ratios.py` for the README table).
let package = Package(
    name: "ExclusionBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Exclusion", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    ],
    targets: [
        // Reading the time-stamp counter, which Swift can't.
        .target(name: "BenchmarkShims", path: "Shims"),
        .executableTarget(
            name: "ExclusionBenchmarks",
            dependencies: [
                "BenchmarkShims",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Exclusion", package: "Exclusion"),
            ],
            path: "Benchmarks/ExclusionBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "BankingBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Banking", package: "Exclusion"),
            ],
            path: "Benchmarks/BankingBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "ExclusionTestingBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Banking", package: "Exclusion"),
                .product(name: "ExclusionTesting", package: "Exclusion"),
            ],
            path: "Benchmarks/ExclusionTestingBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // What an instance costs to make and hold (instance_cost.py runs it), not a benchmark of
        // ordo-one's harness: each kind needs a process of its own and its resident memory.
        .executableTarget(
            name: "InstanceCost",
            dependencies: [.product(name: "Exclusion", package: "Exclusion")],
            path: "InstanceCost",
            exclude: ["malloc-count.c"]
        ),
        .executableTarget(
            name: "DocumentsBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Documents", package: "Exclusion"),
                .product(name: "Exclusion", package: "Exclusion"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Benchmarks/DocumentsBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
