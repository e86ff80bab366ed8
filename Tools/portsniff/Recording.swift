import FoundationEssentials
import Glibc
import RunLoopKit

/// portsniff's one record format, for `--json` and `--write` alike
/// (docs/tap-format.md, "Recordings"): JSON Lines, keys sorted, no blank
/// lines, slashes as they are. The first line says what the file is, its
/// version, and whether the events are in time order (they are, when
/// written through a reorder window: `--window` above 0); each line after
/// it is one event (`PortTapEvent`'s encoding, with its `version`), and a
/// recording made with --write ends with one account line per process
/// (`RecordedAccount`).
struct RecordingHeader: Codable, Equatable {
    /// Always "portsniff-recording".
    var format = RecordingHeader.formatName
    /// The file's version: 2 adds the account lines; 1 is still read.
    var version = RecordingHeader.currentVersion
    /// The events are in time order (monotonic clock).
    var sorted: Bool
    /// The reorder window they were written through, in milliseconds.
    var windowMilliseconds: Int

    static let formatName = "portsniff-recording"
    static let currentVersion = 2
    static let readableVersions = 1...2

    private enum CodingKeys: String, CodingKey {
        case format, version, sorted
        case windowMilliseconds = "window_ms"
    }
}

/// Writes records to a file descriptor (a file, or standard output).
struct RecordWriter {
    let fd: Int32
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    init(fd: Int32) { self.fd = fd }

    func writeHeader(_ header: RecordingHeader) { write(header) }

    func write<Record: Encodable>(_ record: Record) {
        guard var line = try? encoder.encode(record) else { return }
        line.append(UInt8(ascii: "\n"))
        writeAll(fd, Array(line))
    }

    /// One line, as `--json` prints it.
    func line<Record: Encodable>(_ record: Record) -> String {
        (try? encoder.encode(record)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

/// What the sniffer that wrote a recording was owed by one process and
/// received from it (S-TAP-1): written at the end of a --write recording,
/// so that a replay reports the same account, drops after the last event
/// received (known from the process's count file) included.
struct RecordedAccount: Codable, Equatable {
    var pid: Int32
    var started: UInt64
    var name: String?
    var firstOwed: UInt64
    var lastOwed: UInt64
    var received: UInt64
    var dropped: UInt64
    var exited: Bool

    private enum CodingKeys: String, CodingKey {
        case pid, name, received, dropped, exited
        case started = "started_ticks"
        case firstOwed = "first_owed"
        case lastOwed = "last_owed"
    }
}

/// An account line: `{"account":{…}}`.
struct AccountLine: Codable {
    var account: RecordedAccount
}

/// A recording as read: up to where it stops.
struct Recording {
    var header: RecordingHeader
    var events: [PortTapEvent] = []
    /// The account lines, if the recording has them (version 2, written whole).
    var accounts: [RecordedAccount] = []
    /// Where a recording cut short (its last line incomplete) stopped being
    /// read, as "line N (byte B)"; nil for a whole recording.
    var cutAt: String?
}

/// Reads a recording: its header, then its events and account lines;
/// anything else is an error that names the line, except a last line cut
/// short (a recording whose writer was killed), which ends the recording
/// there, as tcpdump reads a capture up to its cut.
enum RecordReader {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func read(_ bytes: [UInt8], path: String) throws(Failure) -> Recording {
        let decoder = JSONDecoder()
        var header: RecordingHeader?
        var events: [PortTapEvent] = []
        var accounts: [RecordedAccount] = []
        var cutAt: String?
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        var offset = 0
        for (index, line) in lines.enumerated() {
            defer { offset += line.count + 1 }
            if line.isEmpty { continue }
            guard header != nil else {
                guard let first = try? decoder.decode(RecordingHeader.self, from: Data(line)), first.format == RecordingHeader.formatName else {
                    throw Failure(description: "\(path):\(index + 1): not a portsniff recording (its first line names the format: --write writes one)")
                }
                guard RecordingHeader.readableVersions.contains(first.version) else {
                    throw Failure(description: "\(path): a recording of version \(first.version); this portsniff reads versions \(RecordingHeader.readableVersions.lowerBound) to \(RecordingHeader.readableVersions.upperBound)")
                }
                header = first
                continue
            }
            do {
                if line.starts(with: Array(#"{"account":"#.utf8)) {
                    accounts.append(try decoder.decode(AccountLine.self, from: Data(line)).account)
                } else {
                    events.append(try decoder.decode(PortTapEvent.self, from: Data(line)))
                }
            } catch {
                // Only the last line, without its newline, may be cut short.
                guard index == lines.count - 1 else { throw Failure(description: "\(path):\(index + 1): not an event record: \(error)") }
                cutAt = "line \(index + 1) (byte \(offset))"
            }
        }
        guard let header else { throw Failure(description: "\(path): empty, not a portsniff recording") }
        return Recording(header: header, events: events, accounts: accounts, cutAt: cutAt)
    }
}
