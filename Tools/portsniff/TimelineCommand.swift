import ArgumentParser
import FoundationEssentials
import Glibc
import RunLoopKit

/// `portsniff timeline FILE`: draws a recording (`--write`, best with
/// `--loops`) as a picture of each thread's timeline (`--svg OUT`), for the
/// docs and for users without a trace viewer, or converts it into a trace
/// for Perfetto and Chrome's trace viewer (`--trace OUT`).
struct TimelineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "portsniff timeline",
        abstract: "Draw a portsniff recording as a timeline: a track per thread, slices for messages and loop work, arrows from each send to its delivery.")

    @Argument(help: ArgumentHelp("A recording made with portsniff --write (- for standard input).", valueName: "FILE"))
    var file: String

    @Option(help: ArgumentHelp("Write the timeline as an SVG picture to OUT.", valueName: "OUT"))
    var svg: String?

    @Option(help: ArgumentHelp("Write the recording as Trace Event JSON (Perfetto, chrome://tracing) to OUT.", valueName: "OUT"))
    var trace: String?

    // 120: pingpong's start and a dozen round trips, whose arrows and
    // latencies stay apart at 1200 pixels; more events crowd the picture.
    @Option(help: ArgumentHelp("Draw the first N events (default 120: a readable picture of a dozen messages; the caption says how many were left out, and how many latency labels had no room).", valueName: "N"))
    var maxEvents = 120

    func validate() throws {
        if svg == nil && trace == nil { throw ValidationError("say what to write: --svg OUT, --trace OUT, or both") }
        if maxEvents <= 0 { throw ValidationError("--max-events must be above zero") }
    }

    func run() throws {
        let fd = file == "-" ? 0 : open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ValidationError("cannot open \(file): \(String(cString: strerror(errno)))") }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        if fd != 0 { close(fd) }
        let recording = try RecordReader.read(bytes, path: file)
        if let cut = recording.cutAt { standardError("portsniff: \(file) is cut short: read up to its \(cut)\n") }
        let (header, recorded) = (recording.header, recording.events)
        var events = header.sorted ? recorded : recorded.enumerated().sorted {
            ($0.element.monotonicTime, $0.offset) < ($1.element.monotonicTime, $1.offset)
        }.map(\.element)
        // Latencies measured again: a recording may carry them or not.
        var matcher = LatencyMatcher()
        for index in events.indices {
            events[index].latency = nil
            matcher.match(&events[index])
        }
        if let trace {
            let out = try Self.create(trace)
            var writer = TraceEventWriter(fd: out)
            for event in events { writer.add(event) }
            writer.finish()
            close(out)
        }
        if let svg {
            let drawn = Array(events.prefix(maxEvents))
            let picture = TimelineSVG(events: drawn, leftOut: events.count - drawn.count).render()
            let out = try Self.create(svg)
            writeAll(out, Array(picture.utf8))
            close(out)
        }
    }

    private static func create(_ path: String) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw ValidationError("cannot open \(path) for writing: \(String(cString: strerror(errno)))") }
        return fd
    }
}
