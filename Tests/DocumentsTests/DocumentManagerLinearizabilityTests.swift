import Documents
import ExclusionTestSupport
import ExclusionTesting
import Foundation
import Testing

/// An in-memory `DocumentManager` as plain values: names in the order added, and what is known
/// about each saved document. Only text documents are saved, so the model can work out their
/// infos itself.
struct DocumentManagerModel: SequentialModel {
    struct State: Hashable, Sendable {
        var names: [String] = []
        var infos: [String: Known] = [:]
    }

    /// What `info(for:)` tells about a text document.
    struct Known: Hashable, Sendable {
        let byteCount: Int
        let wordCount: Int

        init(_ info: DocumentInfo) {
            byteCount = info.byteCount
            wordCount = info.wordCount
        }

        init(text: String) {
            byteCount = text.utf8.count
            wordCount = text.split(whereSeparator: \.isWhitespace).count
        }
    }

    enum Input: Sendable, CustomStringConvertible {
        case addName(String)
        case allDocs
        case save(String, text: String)
        case remove(String)
        case info(String)

        var description: String {
            switch self {
            case .addName(let name): "addDocumentName(\(name.debugDescription))"
            case .allDocs: "allDocs"
            case .save(let name, let text): "save(\(text.debugDescription) as \(name.debugDescription))"
            case .remove(let name): "remove(\(name.debugDescription))"
            case .info(let name): "info(for: \(name.debugDescription))"
            }
        }
    }

    enum Output: Equatable, Sendable {
        case done
        case names([String])
        case info(Known?)
        case saved(Known)
        /// The error's kind and the name it is about; the reason's wording is not modelled.
        case failed(String)

        init(_ error: DocumentError) {
            self =
                switch error {
                case .invalidName(let name): .failed("invalidName \(name)")
                case .notFound(let name): .failed("notFound \(name)")
                case .malformed(let name, _): .failed("malformed \(name)")
                case .unsupportedFormat(let name): .failed("unsupportedFormat \(name)")
                case .duplicateName(let path, _): .failed("duplicateName \(path)")
                case .io(let what): .failed("io \(what)")
                }
        }
    }

    var initialState: State { State() }

    func step(_ state: State, _ input: Input) -> (output: Output, state: State) {
        var next = state
        switch input {
        case .addName(let name):
            // Like save, adding a name ignores one that isn't valid.
            if Self.nameFailure(name) == nil, !next.names.contains(name) { next.names.append(name) }
            return (.done, next)
        case .allDocs:
            return (.names(state.names), state)
        case .info(let name):
            return (.info(state.infos[name]), state)
        case .save(let name, let text):
            if let failure = Self.nameFailure(name) { return (failure, state) }
            guard name.hasSuffix(".txt") else { return (.failed("unsupportedFormat \(name)"), state) }
            guard !text.isEmpty else { return (.failed("malformed \(name)"), state) }
            if !next.names.contains(name) { next.names.append(name) }
            next.infos[name] = Known(text: text)
            return (.saved(Known(text: text)), next)
        case .remove(let name):
            if let failure = Self.nameFailure(name) { return (failure, state) }
            guard next.names.contains(name) else { return (.failed("notFound \(name)"), state) }
            next.names.removeAll { $0 == name }
            next.infos[name] = nil
            return (.done, next)
        }
    }

    private static func nameFailure(_ name: String) -> Output? {
        name.isEmpty || name.hasPrefix(".") || name.contains("/") ? .failed("invalidName \(name)") : nil
    }

    /// A few names, one of them not a document name and one of an unsupported kind, so that
    /// operations often meet on the same document.
    static func generate(_ generator: inout ScenarioGenerator) -> Input {
        let name = ["a.txt", "b.txt", "c.txt", "../d.txt", "e.pdf", ""].randomElement(using: &generator)!
        let text = ["one", "one two", "α β γ", ""].randomElement(using: &generator)!
        return switch Int.random(in: 0..<10, using: &generator) {
        case 0, 1: .addName(name)
        case 2, 3: .allDocs
        case 4, 5: .save(name, text: text)
        case 6: .remove(name)
        default: .info(name)
        }
    }

    static func perform(_ input: Input, on manager: DocumentManager) async -> Output {
        do throws(DocumentError) {
            switch input {
            case .addName(let name):
                manager.addDocumentName(name)
                return .done
            case .allDocs:
                return .names(manager.allDocs)
            case .info(let name):
                return .info(manager.info(for: name).map(Known.init))
            case .save(let name, let text):
                return .saved(Known(try await manager.save(Data(text.utf8), as: name)))
            case .remove(let name):
                try await manager.remove(name)
                return .done
            }
        } catch {
            return Output(error)
        }
    }
}

/// Thousands of short concurrent histories of an in-memory `DocumentManager`, checked against the
/// model; and a manager whose remove looks before it leaps, which must be caught.
@Suite("DocumentManager linearizability", .onThreadsOfItsOwn, .patientTimeLimit(minutes: 10))
struct DocumentManagerLinearizabilityTests {
    @Test func everyOperationIsLinearizable() async {
        let report = await ScenarioRunner(model: DocumentManagerModel(), histories: 1_000).run(
            setUp: { DocumentManager() },
            inputs: DocumentManagerModel.generate,
            perform: { manager, input in await DocumentManagerModel.perform(input, on: manager) })
        print("DocumentManager: \(report.description.prefix { $0 != "\n" })")
        #expect(report.passed, "\(report)")
    }

    @Test func aRemoveThatChecksInOneAccessAndRemovesInAnotherIsCaught() async {
        let report = await bugCatchingRunner(DocumentManagerModel()).run(
            setUp: { DocumentManager() },
            inputs: { generator in
                // One name, saved and removed by three threads at once.
                let name = "a.txt"
                return Bool.random(using: &generator) ? .save(name, text: "one") : .remove(name)
            },
            perform: { manager, input in
                guard case .remove(let name) = input else {
                    return await DocumentManagerModel.perform(input, on: manager)
                }
                // The broken variant: "is it there?" in one read, then remove, which can't fail.
                guard manager.allDocs.contains(name) else { return .failed("notFound \(name)") }
                // A suspension between the look and the leap, as real work there would be: in a
                // release build the window is otherwise a few instructions wide, and 20,000
                // histories once passed without two threads meeting in it.
                await Task.yield()
                try? await manager.remove(name)
                return .done
            })
        print("DocumentManager with a two-step remove, caught: \(report.description.prefix { $0 != "\n" })")
        #expect(report.failure != nil, "\(report)")
    }
}
