// A loop's timeline as a picture (issue 23, item 8): pingpong run under
// portsniff with its loops traced, written as Trace Event JSON (whose
// structure is checked: every thread named, every flow bound to a slice)
// and drawn as an SVG, which headless Chromium lays out: the test counts
// the drawing's elements the browser gave a size, and takes a screenshot.
import Foundation
import Glibc
import Testing
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("portsniff's timeline", .blocksThreads)
struct SnifferTimelineTests {
    static let chromium: String? = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { (path: String) in access(path, X_OK) == 0 }
    static let programsBuilt = SpawnedProgram.isBuilt("portsniff") && SpawnedProgram.isBuilt("pingpong")

    /// Runs `pingpong --count <roundTrips>` under `portsniff --loops` with `arguments`.
    static func sniffPingpong(_ arguments: [String], roundTrips: Int, in directory: String) throws {
        let sniff = try SpawnedProgram(
            "portsniff", ["--loops"] + arguments + ["--", SpawnedProgram.productsDirectory + "/pingpong", "--count", "\(roundTrips)"],
            environment: ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"], in: directory)
        #expect(sniff.waitForExit(timeout: 120) == 0, "\(sniff.errorOutput)")
        #expect(sniff.errorOutput.contains("+ 0 dropped"), "\(sniff.errorOutput)")
    }

    @Test("portsniff --write FILE --format trace writes Trace Event JSON: named processes and threads (kernel tids), a slice for each SEND and DELIVER and for each loop pass, sleep and callout, and a flow per message whose two ends each bind to a slice of their thread, with the latency in the delivery's arguments",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func traceEventStructure() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let roundTrips = 5
        try Self.sniffPingpong(["--write", directory + "/trace.json", "--format", "trace"], roundTrips: roundTrips, in: directory)
        let document = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: directory + "/trace.json"))) as? [String: Any]
        let events = try #require(document?["traceEvents"] as? [[String: Any]])
        func string(_ event: [String: Any], _ key: String) -> String? { event[key] as? String }
        func number(_ event: [String: Any], _ key: String) -> Double? { (event[key] as? NSNumber)?.doubleValue }
        let slices = events.filter { string($0, "ph") == "X" }
        let named = Set(events.filter { string($0, "ph") == "M" && string($0, "name") == "thread_name" }.map { "\(number($0, "pid")!)/\(number($0, "tid")!)" })
        let processes = Set(events.filter { string($0, "ph") == "M" && string($0, "name") == "process_name" }.compactMap { number($0, "pid") })
        // Every track named; tids are kernel tids (the process's own threads, not 0).
        for event in events where string(event, "ph") != "M" && string(event, "s") != "p" {
            #expect(named.contains("\(number(event, "pid")!)/\(number(event, "tid")!)"), "an unnamed track: \(event)")
            #expect(processes.contains(number(event, "pid")!))
            #expect(number(event, "tid")! != 0)
        }
        #expect(named.count == 2, "pingpong's two threads: \(named)")
        let sends = slices.filter { (string($0, "name") ?? "").hasPrefix("SEND") }
        let deliveries = slices.filter { (string($0, "name") ?? "").hasPrefix("DELIVER") }
        #expect(sends.count == 2 * roundTrips && deliveries.count == 2 * roundTrips)
        #expect(deliveries.allSatisfy { (($0["args"] as? [String: Any])?["latency_ns"] as? NSNumber).map { $0.int64Value > 0 } == true })
        for name in ["pass", "sleep", "socketSource"] {
            #expect(slices.contains { string($0, "name") == name && number($0, "dur")! > 0 }, "no \(name) slice")
        }
        // Flows: one start and one end per message, string ids, each bound
        // to a slice of its own thread that encloses its time.
        let flows = events.filter { ["s", "f"].contains(string($0, "ph")) }
        let byID = Dictionary(grouping: flows) { string($0, "id") ?? "" }
        #expect(byID.count == 2 * roundTrips && !byID.keys.contains(""))
        for (id, ends) in byID {
            #expect(ends.map { string($0, "ph")! }.sorted() == ["f", "s"], "flow \(id): \(ends)")
            for end in ends {
                let ts = number(end, "ts")!
                let bound = slices.contains { slice in
                    number(slice, "pid") == number(end, "pid") && number(slice, "tid") == number(end, "tid")
                        && number(slice, "ts")! <= ts && ts <= number(slice, "ts")! + number(slice, "dur")!
                        && (string(slice, "name") ?? "").hasPrefix(string(end, "ph") == "s" ? "SEND" : "DELIVER")
                }
                #expect(bound, "flow \(id)'s \(string(end, "ph")!) binds to no slice")
            }
        }
    }

    /// Headless Chromium run to its end with `arguments`. The browser is
    /// the test's instrument, not what it tests: once in a loaded CI run it
    /// died of its own SIGTRAP (a CHECK of its own) before it wrote its
    /// screenshot, so a browser that dies by a signal is run once more,
    /// saying so. A browser that exits with a status, or dies twice, is
    /// returned as it ended, for the test to report.
    static func runChromium(_ arguments: [String], in directory: String) throws -> SpawnedProgram {
        let command = ["--headless", "--no-sandbox", "--disable-gpu"] + arguments
        let first = try SpawnedProgram(path: chromium!, command, in: directory)
        guard let status = first.waitForExit(timeout: 120), status > 128 else { return first }
        print("Chromium died by signal \(status - 128); running it once more. Its standard error: \(first.errorOutput)")
        let second = try SpawnedProgram(path: chromium!, command, in: directory)
        _ = second.waitForExit(timeout: 120)
        return second
    }

    @Test("portsniff timeline FILE --svg OUT draws a recording: a track per thread, loop passes, sleeps and callouts, each SEND and DELIVER, an arrow per message with its latency; headless Chromium lays every element out with a size and takes a screenshot",
          .enabled(if: programsBuilt && chromium != nil, "needs the programs built and Chromium (scripts/test.sh installs it)"))
    func svgTimelineInABrowser() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let roundTrips = 3
        let recording = directory + "/loops.jsonl", picture = directory + "/timeline.svg"
        try Self.sniffPingpong(["--write", recording], roundTrips: roundTrips, in: directory)
        let timeline = try SpawnedProgram("portsniff", ["timeline", recording, "--svg", picture], in: directory)
        #expect(timeline.waitForExit(timeout: 60) == 0, "\(timeline.errorOutput)")
        let svg = SpawnedProgram.read(picture)
        func count(_ className: String) -> Int { svg.components(separatedBy: "class=\"\(className)\"").count - 1 }
        #expect(count("track") == 2 && count("send") == 2 * roundTrips && count("deliver") == 2 * roundTrips)
        // Every message's latency is drawn, or counted in the caption as having had no room (no two texts overlap).
        let notShown = svg.range(of: #"\d+ latency labels? not shown"#, options: .regularExpression).map { Int(svg[$0].prefix { $0.isNumber })! } ?? 0
        #expect(count("flow") == 2 * roundTrips && count("latency") + notShown == 2 * roundTrips && count("latency") > 0)
        #expect(count("pass") > 0 && count("sleep") > 0 && count("callout") > 0)

        // In the browser: every element above laid out with a width and a height.
        let page = directory + "/timeline.html"
        let script = """
            <script>
            const result = {};
            for (const name of ['track', 'pass', 'sleep', 'callout', 'send', 'deliver', 'flow', 'latency']) {
              const all = [...document.querySelectorAll('.' + name)];
              result[name] = [all.length, all.filter(e => { const b = e.getBBox(); return b.width > 0 && b.height > 0 || (name === 'flow' && b.width + b.height > 0); }).length];
            }
            document.body.setAttribute('data-drawn', JSON.stringify(result));
            </script>
            """
        try ("<!DOCTYPE html><html><body>" + svg + script + "</body></html>").write(toFile: page, atomically: true, encoding: .utf8)
        let dom = try Self.runChromium(["--dump-dom", "file://" + page], in: directory)
        #expect(dom.waitForExit(timeout: 120) == 0, "\(dom.errorOutput)")
        let attribute = try #require(dom.output.range(of: #"data-drawn="[^"]*""#, options: .regularExpression).map { String(dom.output[$0]) })
        let json = attribute.dropFirst("data-drawn=\"".count).dropLast().replacingOccurrences(of: "&quot;", with: "\"")
        let drawn = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: [Int]])
        for (name, counts) in drawn {
            #expect(counts[0] == counts[1] && counts[0] == count(name), "\(name): \(counts) in the browser, \(count(name)) in the file")
        }
        #expect(drawn["send"]?[1] == 2 * roundTrips && drawn["flow"]?[1] == 2 * roundTrips)

        let screenshot = directory + "/timeline.png"
        let shot = try Self.runChromium(["--hide-scrollbars", "--window-size=1200,400", "--screenshot=" + screenshot, "file://" + picture], in: directory)
        #expect(shot.waitForExit(timeout: 120) == 0, "\(shot.errorOutput)")
        let png = try Data(contentsOf: URL(fileURLWithPath: screenshot))
        #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 5_000, "not a screenshot: \(png.count) bytes")
    }
    /// Lays `svg` out in headless Chromium and returns what the page
    /// measured: overlapping text pairs, pass bands and their labels, and
    /// the counts of latency labels, flows and legend entries.
    static func layout(_ svg: String, in directory: String) throws -> [String: Any] {
        let page = directory + "/layout.html"
        let script = """
            <script>
            const texts = [...document.querySelectorAll('text')].map(t => ({ text: t.textContent, box: t.getBBox() }));
            const overlaps = [];
            for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
              const a = texts[i].box, b = texts[j].box;
              if (a.x + 0.5 < b.x + b.width && b.x + 0.5 < a.x + a.width && a.y + 0.5 < b.y + b.height && b.y + 0.5 < a.y + a.height)
                overlaps.push(texts[i].text + ' / ' + texts[j].text);
            }
            const bands = [...document.querySelectorAll('rect.pass')].map(r => r.getBBox());
            const bandLabels = [...document.querySelectorAll('text.pass-label')].map(t => t.getBBox());
            const labelled = bands.filter((b, i) => bandLabels[i] && bandLabels[i].width > 0
              && bandLabels[i].x >= Math.min(b.x, 1200 - bandLabels[i].width - 5) - 0.5 && bandLabels[i].x <= b.x + b.width).length;
            const result = { overlaps, bands: bands.length, labelled, latencies: document.querySelectorAll('text.latency').length,
              flows: document.querySelectorAll('.flow').length, legend: document.querySelectorAll('.legend text').length,
              outside: texts.filter(t => t.box.x < 0 || t.box.x + t.box.width > 1200.5).map(t => t.text) };
            document.body.setAttribute('data-layout', JSON.stringify(result));
            </script>
            """
        try ("<!DOCTYPE html><html><body>" + svg + script + "</body></html>").write(toFile: page, atomically: true, encoding: .utf8)
        let dom = try runChromium(["--dump-dom", "file://" + page], in: directory)
        #expect(dom.waitForExit(timeout: 120) == 0, "\(dom.errorOutput)")
        let attribute = try #require(dom.output.range(of: #"data-layout="[^"]*""#, options: .regularExpression).map { String(dom.output[$0]) })
        let json = attribute.dropFirst("data-layout=\"".count).dropLast().replacingOccurrences(of: "&quot;", with: "\"")
            .replacingOccurrences(of: "&amp;", with: "&").replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
        return try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
    }

    @Test("portsniff timeline stays readable at any size: no two texts overlap, every pass band keeps its label, some flows keep their latency, a legend, and the caption says how many labels had no room: for 4 events and for pingpong --count 1000 with its loops at the default size",
          .enabled(if: programsBuilt && chromium != nil, "needs the programs built and Chromium (scripts/test.sh installs it)"))
    func readableAtAnySize() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        // Four events: two messages, whose latencies were drawn on top of each other.
        let small = directory + "/small.jsonl", big = directory + "/big.jsonl"
        try writeRecording([
            madeUpEvent(.send, seq: 1, index: 0, thread: "ping", destination: "pong-port", msgid: 1, trace: 1),
            madeUpEvent(.send, seq: 2, index: 0, thread: "ping", destination: "pong-port", msgid: 1, trace: 2),
            madeUpEvent(.deliver, seq: 3, index: 1, pid: 4343, thread: "pong", destination: "pong-port", msgid: 1, trace: 1),
            madeUpEvent(.deliver, seq: 4, index: 1, pid: 4343, thread: "pong", destination: "pong-port", msgid: 1, trace: 2),
        ], to: small, sorted: true)
        try Self.sniffPingpong(["--write", big], roundTrips: 1000, in: directory)
        for (recording, loops) in [(small, false), (big, true)] {
            let picture = recording + ".svg"
            let timeline = try SpawnedProgram("portsniff", ["timeline", recording, "--svg", picture], in: directory)
            #expect(timeline.waitForExit(timeout: 60) == 0, "\(timeline.errorOutput)")
            let svg = SpawnedProgram.read(picture)
            let layout = try Self.layout(svg, in: directory)
            #expect((layout["overlaps"] as? [String]) == [], "\(recording): overlapping texts: \(layout["overlaps"] ?? "?")")
            #expect((layout["outside"] as? [String]) == [], "\(recording): texts outside the picture: \(layout["outside"] ?? "?")")
            let bands = layout["bands"] as? Int ?? -1, labelled = layout["labelled"] as? Int ?? -2
            #expect(bands == labelled && (loops ? bands > 0 : bands == 0), "\(recording): \(labelled) of \(bands) pass bands labelled")
            let latencies = layout["latencies"] as? Int ?? 0, flows = layout["flows"] as? Int ?? 0
            #expect(flows > 0 && latencies >= 1 && latencies <= flows, "\(recording): \(latencies) latency labels for \(flows) flows")
            #expect(layout["legend"] as? Int == 12, "\(recording): the legend's entries")
            // What had no room is said.
            if latencies < flows {
                #expect(svg.contains("; \(flows - latencies) latency label\(flows - latencies == 1 ? "" : "s") not shown (no room)"), "\(recording)")
            }
        }
    }
}
