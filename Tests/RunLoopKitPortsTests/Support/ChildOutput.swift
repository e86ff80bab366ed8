// What an exit-test child said on its standard error (its FAIL and REPORT
// lines, see PortChild), read by the parent.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

// MARK: - The parent's side

/// What a child process said, read by its parent.
struct ChildOutput: CustomStringConvertible {
    let standardError: String
    let failures: [String]
    let reports: [String: String]

    init(_ result: ExitTest.Result) {
        standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
        var failures: [String] = []
        var reports: [String: String] = [:]
        for line in standardError.split(separator: "\n") {
            if line.hasPrefix("FAIL: ") {
                failures.append(String(line.dropFirst(6)))
            } else if line.hasPrefix("REPORT ") {
                let field = line.dropFirst(7)
                if let equals = field.firstIndex(of: "=") {
                    reports[String(field[..<equals])] = String(field[field.index(after: equals)...])
                }
            }
        }
        self.failures = failures
        self.reports = reports
    }

    var description: String { "child's standard error:\n\(standardError)" }
    var comment: Comment { Comment(rawValue: description) }

    /// Records an issue for every check that failed in the child, and one if
    /// the child did not run to its end (when it should have).
    func expectSuccess(finished: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) {
        for failure in failures {
            Issue.record(Comment(rawValue: "in the child: \(failure)"), sourceLocation: sourceLocation)
        }
        if finished && reports["finished"] != "1" {
            Issue.record(Comment(rawValue: "the child did not finish. \(description)"), sourceLocation: sourceLocation)
        }
    }

    func integer(_ key: String) -> Int? { reports[key].flatMap { Int($0) } }
    func unsigned(_ key: String) -> UInt64? { reports[key].flatMap { UInt64($0) } }
}
