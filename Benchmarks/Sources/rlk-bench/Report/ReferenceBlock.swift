import Glibc

/// `--write-reference PATH`: the run's results written into a document
/// (docs/performance.md, "Results") between two marker lines, one block per
/// placement:
///
///     <!-- rlk-bench results: cross -->
///     … replaced by each run with --placement cross …
///     <!-- end -->
///
/// Only the lines between the markers of the run's placement change; the
/// rest of the document is left byte for byte. A document without that
/// placement's markers is refused before anything is measured.
enum ReferenceBlock {
    static func startMarker(_ placement: String) -> String { "<!-- rlk-bench results: \(placement) -->" }
    static let endMarker = "<!-- end -->"

    /// Where a placement's block lies: the lines of its two markers.
    struct Span: Equatable {
        let start: Int
        let end: Int
    }

    /// The placement's block in `lines`: one start marker, and the first end
    /// marker after it. Throws a message for the user when there is not
    /// exactly one.
    static func span(in lines: [Substring], placement: String) throws -> Span {
        let start = startMarker(placement)
        let starts = lines.indices.filter { lines[$0].trimmingSpaces == start }
        guard let first = starts.first else {
            throw BenchError("no block for --placement \(placement): add the lines \"\(start)\" and \"\(endMarker)\" where its results go")
        }
        guard starts.count == 1 else {
            throw BenchError("\"\(start)\" appears \(starts.count) times; it must appear once")
        }
        guard let end = lines[(first + 1)...].firstIndex(where: { $0.trimmingSpaces == endMarker }) else {
            throw BenchError("\"\(start)\" (line \(first + 1)) has no \"\(endMarker)\" after it")
        }
        return Span(start: first, end: end)
    }

    /// `document` with the lines between the placement's markers replaced by
    /// `body`, everything else as it was.
    static func splice(_ document: String, placement: String, body: String) throws -> String {
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false)
        let span = try span(in: lines, placement: placement)
        var bodyLines = body.split(separator: "\n", omittingEmptySubsequences: false)
        if bodyLines.last == "" { bodyLines.removeLast() }
        let spliced = lines[...span.start] + bodyLines + lines[span.end...]
        return spliced.joined(separator: "\n")
    }

    /// Checks, before a run, that `path` can be read and has the placement's block.
    static func check(_ path: String, placement: String) throws {
        guard let document = readDocument(path) else { throw BenchError("cannot read \(path)") }
        _ = try span(in: document.split(separator: "\n", omittingEmptySubsequences: false), placement: placement)
        guard access(path, W_OK) == 0 else { throw BenchError("cannot write \(path)") }
    }

    /// What the block says about the run: taken at its start, so that it
    /// describes the build that was measured.
    struct Provenance {
        let date: String
        let commit: String
    }

    static func provenance(of path: String) -> Provenance {
        Provenance(date: utcNow(), commit: commitDescription(for: path))
    }

    /// The block's lines: when, what, where, then the results as
    /// `--markdown` prints them and the count of targets met.
    static func body(_ rows: [ScenarioResult], provenance: Provenance, machine: MachineInfo, config: RunConfig,
                     filters: [String], seconds: Double) -> String {
        let passes = "\(config.passes) pass\(config.passes == 1 ? "" : "es")"
        let run = config.quick ? "a quick run (`--quick`, \(passes))" : "a full run\(config.passes > 1 ? " (\(passes))" : "")"
        let only = filters.isEmpty ? "" : " of the scenarios matching \(filters.map { "`\($0)`" }.joined(separator: " or "))"
        return """

            Written by `rlk-bench --write-reference` on \(provenance.date) from \(run)\(only) with \
            `--placement \(config.placement.mode.rawValue)` (\(config.placement)), \(format(seconds)) s, \
            at commit \(provenance.commit).
            Machine: \(machine.cpus) CPUs, \(machine.cpuModel); \(machine.kernel); Swift \(machine.swift); libzmq \(machine.libzmq).

            \(MarkdownReport.table(rows))
            \(TableReport.metCount(rows)).

            """
    }

    /// Writes the block into `path` (through a temporary file and a rename,
    /// so that a failed write leaves the document as it was).
    static func write(_ rows: [ScenarioResult], to path: String, provenance: Provenance, machine: MachineInfo,
                      config: RunConfig, filters: [String], seconds: Double) throws {
        guard let document = readDocument(path) else { throw BenchError("cannot read \(path)") }
        let text = try splice(document, placement: config.placement.mode.rawValue,
                              body: body(rows, provenance: provenance, machine: machine, config: config,
                                         filters: filters, seconds: seconds))
        let temporary = path + ".rlk-bench-new"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw BenchError("cannot write \(temporary): \(String(cString: strerror(errno)))") }
        var bytes = text
        let written = bytes.withUTF8 { buffer -> Bool in
            var offset = 0
            while offset < buffer.count {
                let count = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if count <= 0 { return false }
                offset += count
            }
            return true
        }
        let closed = close(fd) == 0
        guard written, closed, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw BenchError("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    private static func readDocument(_ path: String) -> String? {
        guard access(path, R_OK) == 0 else { return nil }
        return ProcessStats.readSmallFile(path)
    }

    /// "2026-11-28 14:03 UTC".
    private static func utcNow() -> String {
        var now = time(nil)
        var parts = tm()
        gmtime_r(&now, &parts)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%d %H:%M UTC", &parts)
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// "`1a2b3c4` (a clean tree)", or with the tracked files changed since
    /// it, the document itself left out: it is what the run writes.
    private static func commitDescription(for path: String) -> String {
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        guard let top = git(["-C", directory.isEmpty ? "/" : directory, "rev-parse", "--show-toplevel"]).first,
              let commit = git(["-C", top, "rev-parse", "--short", "HEAD"]).first else {
            return "unknown (not in a git checkout)"
        }
        let document = realPath(path)
        let changed = git(["-C", top, "status", "--porcelain", "--untracked-files=no"]).compactMap { line -> String? in
            guard line.count > 3 else { return nil }
            let named = String(line.dropFirst(3))
            let file = named.split(separator: " -> ").last.map(String.init) ?? named
            return realPath(top + "/" + file) == document ? nil : file
        }
        guard !changed.isEmpty else { return "`\(commit)` (a clean tree)" }
        let shown = changed.prefix(5).map { "`\($0)`" }.joined(separator: ", ")
        let more = changed.count > 5 ? " and \(changed.count - 5) more" : ""
        return "`\(commit)` with uncommitted changes to \(shown)\(more)"
    }

    /// `git arguments…`'s output lines; empty when git fails.
    private static func git(_ arguments: [String]) -> [String] {
        let command = (["git"] + arguments).map(shellQuoted).joined(separator: " ") + " 2>/dev/null"
        guard let pipe = popen(command, "r") else { return [] }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, pipe)
            if count == 0 { break }
            output += buffer[0..<count]
        }
        guard pclose(pipe) == 0 else { return [] }
        return String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    private static func shellQuoted(_ word: String) -> String {
        "'" + word.replacingAll("'", "'\\''") + "'"
    }

    private static func realPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" || first == "\r" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" || last == "\r" { text.removeLast() }
        return text
    }
}
