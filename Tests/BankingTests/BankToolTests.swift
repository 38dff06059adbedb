// Runs the tool in a process of its own: only where a test can start one.
#if CHILD_PROCESSES
import ExclusionTestSupport
import Foundation
import Testing
import ToolTesting

/// End-to-end: the built `bank` executable, its output and its exit codes.
@Suite("bank tool", .patientTimeLimit(minutes: 5))
struct BankToolTests {
    private func bank(_ arguments: String...) async throws -> ToolRun { try await runTool("bank", arguments) }

    @Test func simulatePrintsAReportAndExitsZero() async throws {
        let run = try await bank("simulate", "--accounts", "40", "--threads", "3", "--operations", "5000")
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("Simulated 5000 operations on 40 accounts with 3 threads"))
        #expect(run.output.contains("operations per second"))
        #expect(run.output.contains("[ok] money is conserved"))
        #expect(run.output.contains("Accounts: 40 open at the start"))
        #expect(run.output.contains("opened and"))
        #expect(run.output.contains("% of operations)"))
        #expect(run.output.contains("All checks passed."))
        // Not a terminal: plain progress lines on standard error, no carriage returns.
        #expect(run.errors.contains("progress: 5000/5000 operations (100%)"))
        #expect(!run.errors.contains("\r"))
    }

    @Test func outputThatCantBeWrittenExitsOneAndAClosedStreamNeverCrashes() async throws {
        // Output appended to a file already as large as the tool may make one (`ulimit -f`, in KiB),
        // which works on every platform: with SIGXFSZ ignored (which the tool inherits), its first
        // write fails with EFBIG. The limit is not 0, under which ThreadSanitizer's runtime faults.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bank-output-\(UUID())")
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 64 << 20)
        try handle.close()
        let tooLarge = try await runToolInShell(
            "bank", #"trap '' XFSZ; ulimit -f 65536; "$TOOL" simulate --operations 1000 >> "\#(file.path)""#)
        #expect(tooLarge.status == 1)
        #expect(tooLarge.errors.contains("cannot write the output: File too large"), "\(tooLarge.errors)")
        if FileManager.default.fileExists(atPath: "/dev/full") {  // Linux's device that is always full
            let full = try await runToolInShell("bank", #""$TOOL" simulate --operations 1000 > /dev/full"#)
            #expect(full.status == 1)
            #expect(full.errors.contains("cannot write the output: No space left on device"))
        }
        let closedOutput = try await runToolInShell("bank", #""$TOOL" simulate --operations 1000 >&-"#)
        #expect(closedOutput.status == 1)
        #expect(closedOutput.errors.contains("standard output is closed"))
        let closedErrors = try await runToolInShell("bank", #""$TOOL" simulate --operations 1000 2>&-"#)
        #expect(closedErrors.status == 0)
        #expect(closedErrors.output.contains("All checks passed."))
        let bothClosed = try await runToolInShell("bank", #""$TOOL" simulate --operations 1000 >&- 2>&-"#)
        #expect(bothClosed.status == 1)
    }

    @Test func aReaderThatLeavesEndsTheToolQuietly() async throws {
        // The report meets a pipe with no reader.
        let run = try await runToolInShell("bank", withItsReaderGone(#""$TOOL" simulate --operations 1000"#))
        #expect(run.status == 1)
        #expect(!run.errors.contains("Error"), "\(run.errors)")
        #expect(!run.errors.contains("Broken pipe"))
        #expect(run.errors.contains("progress: 1000/1000"))  // the simulation ran to its end
    }

    @Test func simulateIsTheDefaultSubcommand() async throws {
        let run = try await bank("--accounts", "8", "--operations", "100", "--concurrency", "readers-writer")
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("readers-writer ledger"))
    }

    @Test func batchedNotificationsAreAnOption() async throws {
        let run = try await bank("simulate", "--accounts", "20", "--operations", "5000", "--notifications", "batched")
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("batched notifications"))
        #expect(run.output.contains("All checks passed."))
    }

    @Test func changesCanBeCountedThroughTheAsyncSequence() async throws {
        let run = try await bank("simulate", "--accounts", "20", "--operations", "5000", "--count-through", "changes")
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("every change given once, in order"))
        #expect(run.output.contains("All checks passed."))
    }

    @Test func aContentionProfileIsWrittenAndItsTopRowsPrinted() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("contention-\(UUID()).pb.gz")
        defer { try? FileManager.default.removeItem(at: file) }
        // Whether threads wait for the ledger is up to the scheduler: more threads, until some did.
        var run: ToolRun?
        var profile: Pprof?
        var ledger: [Pprof.Sample] = []
        for threads in [8, 16, 32] where ledger.isEmpty {
            run = try await bank(
                "simulate", "--threads", "\(threads)", "--operations", "40000", "--contention-profile", file.path)
            profile = try Pprof(gzipped: Data(contentsOf: file))
            ledger = profile?.samples.filter { $0.labels["label"] == "bank ledger" } ?? []
        }
        guard let run, let profile else { return }
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("Contention profile:"))
        #expect(run.errors.contains("Contention profile written to \(file.path)."))
        // Read back with the tests' own decoder: Go's profile types, and the ledger's waits
        // labelled and placed (`.ci/run` also reads such a file with Go's pprof).
        #expect(profile.sampleTypes == [["contentions", "count"], ["delay", "nanoseconds"]])
        #expect(!ledger.isEmpty, "\(profile.samples.map(\.labels))")
        #expect(ledger.allSatisfy { $0.labels["type"] == "Exclusive<Ledger>" })
        #expect(ledger.allSatisfy { ["blocked thread", "suspended task"].contains($0.labels["wait"]) })
        #expect(ledger.allSatisfy { $0.values.count == 2 && $0.values[0] > 0 && $0.values[1] > 0 })
        #expect(ledger.contains { $0.frames.contains { $0.hasPrefix("waited at Banking/") } })
        #expect(run.output.contains("All checks passed."))
    }

    @Test func theEnvironmentVariableProfilesARunWithoutTheOption() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("contention-\(UUID()).pb.gz")
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try await runToolInShell(
            "bank", "EXCLUSION_CONTENTION_PROFILE='\(file.path)' \"$TOOL\" simulate --operations 20000")
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.errors.contains("Contention profile written to \(file.path)"))
        #expect(FileManager.default.fileExists(atPath: file.path))
    }

    @Test func jsonReportIsValidJSON() async throws {
        let run = try await bank("simulate", "--accounts", "10", "--operations", "2000", "--json", "--seed", "9")
        #expect(run.status == 0, "\(run.errors)")
        let json = try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any]
        #expect(json?["passed"] as? Bool == true)
        #expect((json?["configuration"] as? [String: Any])?["seed"] as? Int == 9)
        #expect(json?["operationsPerSecond"] is Double)
        #expect(json?["accountsOpened"] is Int)
        #expect(json?["openAccounts"] is Int)
        #expect(json?["rejectionShares"] is [String: Double])
    }

    @Test(arguments: [
        ["simulate", "--accounts", "0"],
        ["simulate", "--accounts", "7"],  // fewer than two for each of the 4 threads
        ["simulate", "--accounts", "2", "--threads", "2"],
        ["simulate", "--threads", "0"],
        ["simulate", "--operations", "-1"],
        ["simulate", "--concurrency", "parallel"],
        ["simulate", "--notifications", "never"],
        ["simulate", "--count-through", "callbacks"],
        ["simulate", "--seed", "minus one"],
        ["simulate", "--bogus"],
        ["withdraw"],
    ])
    func badArgumentsExit64WithAMessage(arguments: [String]) async throws {
        let run = try await runTool("bank", arguments)
        #expect(run.status == 64)
        #expect(run.errors.contains("Error:"))
    }
}
#endif
