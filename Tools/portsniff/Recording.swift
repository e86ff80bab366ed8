import FoundationEssentials
import Glibc
import RunLoopKit

/// portsniff's one record format, for `--json` and `--write` alike
/// (docs/tap-format.md, "Recordings"): JSON Lines, keys sorted, no blank
/// lines, slashes as they are. The first line says what the file is, its
/// version, and whether the events are in time order (they are, when
/// written through a reorder window: `--window` above 0); each line after
/// it is one event (`PortTapEvent`'s encoding, with its `version`).
struct RecordingHeader: Codable, Equatable {
    /// Always "portsniff-recording".
    var format = RecordingHeader.formatName
    var version = PortTapEvent.recordVersion
    /// The events are in time order (monotonic clock).
    var sorted: Bool
    /// The reorder window they were written through, in milliseconds.
    var windowMilliseconds: Int

    static let formatName = "portsniff-recording"

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

/// Reads a recording: its header, then its events; anything else is an
/// error that names the line.
enum RecordReader {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func read(_ bytes: [UInt8], path: String) throws(Failure) -> (RecordingHeader, [PortTapEvent]) {
        let decoder = JSONDecoder()
        var header: RecordingHeader?
        var events: [PortTapEvent] = []
        for (index, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
            guard let known = header else {
                guard let first = try? decoder.decode(RecordingHeader.self, from: Data(line)), first.format == RecordingHeader.formatName else {
                    throw Failure(description: "\(path):\(index + 1): not a portsniff recording (its first line names the format: --write writes one)")
                }
                guard first.version == PortTapEvent.recordVersion else {
                    throw Failure(description: "\(path): a recording of version \(first.version); this portsniff reads version \(PortTapEvent.recordVersion)")
                }
                header = first
                continue
            }
            _ = known
            do {
                events.append(try decoder.decode(PortTapEvent.self, from: Data(line)))
            } catch {
                throw Failure(description: "\(path):\(index + 1): not an event record: \(error)")
            }
        }
        guard let header else { throw Failure(description: "\(path): empty, not a portsniff recording") }
        return (header, events)
    }
}
