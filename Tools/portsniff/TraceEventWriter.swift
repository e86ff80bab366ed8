import FoundationEssentials
import Glibc
import RunLoopKit

/// Writes events as a trace for Perfetto and Chrome's trace viewer (the
/// Trace Event Format's JSON: `{"traceEvents": [...]}`), as they come, in
/// time order: a track per thread (the kernel tid), named by metadata
/// records for every process and thread; each SEND and DELIVER a short
/// slice; each pair a flow arrow from the send's slice to the delivery's
/// (flow ids are the trace ids as strings: they pass 2^53, past what a
/// viewer's numbers hold), with the latency in the delivery's arguments;
/// failed sends, drops on receipt and the events this sniffer missed as
/// instant events; with loop tracing, each pass, sleep and callout a slice
/// of its own length, which the message slices and the callouts nest in.
/// Times are CLOCK_MONOTONIC in microseconds, as every event carries it.
struct TraceEventWriter {
    let fd: Int32
    private var wroteFirst = false
    private var namedProcesses: Set<Int32> = []
    private var namedThreads: Set<Int64> = []

    /// How long a SEND or DELIVER slice lasts, in microseconds: short enough
    /// to nest in the callout that made it.
    static let messageSliceMicroseconds = 0.1

    init(fd: Int32) {
        self.fd = fd
        writeAll(fd, Array(#"{"displayTimeUnit":"ns","otherData":{"clock":"CLOCK_MONOTONIC","writer":"portsniff"},"traceEvents":["#.utf8))
    }

    /// Adds one event (its latency set if it completes a pair).
    mutating func add(_ event: PortTapEvent) {
        name(event)
        let ts = Self.microseconds(event.monotonicTime)
        let common = "\"pid\":\(event.pid),\"tid\":\(event.tid),\"ts\":\(ts)"
        switch event.kind {
        case .send, .deliver:
            var args = ["\"msgid\":\(event.msgid)", "\"seq\":\(event.seq)", "\"destination\":\(Self.quoted(event.destination))",
                        "\"data_bytes\":\(event.dataBytes)", "\"components\":\(event.componentCount)"]
            if let source = event.source { args.append("\"source\":\(Self.quoted(source))") }
            if let latency = event.latency { args.append("\"latency_ns\":\(latency)") }
            if let id = event.w3cTraceID { args.append("\"w3c_trace_id\":\(Self.quoted(id))") }
            if let call = event.actorCall {
                args.append("\"call\":\(call.id)")
                args.append("\"actor\":\(call.actor)")
                if let method = call.method { args.append("\"method\":\(Self.quoted(method))") }
            }
            let name = (event.kind == .send ? "SEND " : "DELIVER ") + (event.actorCall?.text ?? "msgid \(event.msgid)")
            emit("{\"ph\":\"X\",\"cat\":\"port\",\"name\":\(Self.quoted(name)),\(common),\"dur\":\(Self.messageSliceMicroseconds),\"args\":{\(args.joined(separator: ","))}}")
            if let trace = event.trace {
                // Bound to the enclosing slice: the one just written.
                let phase = event.kind == .send ? "s" : "f"
                emit("{\"ph\":\"\(phase)\",\"bp\":\"e\",\"cat\":\"message\",\"name\":\"message\",\"id\":\"0x\(String(trace, radix: 16))\",\(common)}")
            }
        case .sendFailed, .messageDropped:
            let name = (event.kind == .sendFailed ? "SEND FAILED" : "DROPPED") + " msgid \(event.msgid)"
            emit("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"port\",\"name\":\(Self.quoted(name)),\(common),\"args\":{\"reason\":\(Self.quoted(event.reason ?? "")),\"destination\":\(Self.quoted(event.destination))}}")
        case .pass, .sleep, .callout:
            let name = event.kind == .callout ? event.callout ?? "callout" : event.kind.rawValue
            var args = ["\"mode\":\(Self.quoted(event.mode ?? ""))"]
            if let origin = event.origin { args.append("\"origin\":\(Self.quoted(origin))") }
            if let pass = event.passNumber { args.append("\"pass\":\(pass)") }
            let duration = Self.microseconds(event.duration ?? 0)
            emit("{\"ph\":\"X\",\"cat\":\"loop\",\"name\":\(Self.quoted(name)),\(common),\"dur\":\(duration),\"args\":{\(args.joined(separator: ","))}}")
        }
    }

    /// Events of `pid` this sniffer missed, found before the event at `time`.
    mutating func addMissed(_ count: UInt64, pid: Int32, at time: Int64) {
        emit("{\"ph\":\"i\",\"s\":\"p\",\"cat\":\"tap\",\"name\":\"\(count) tap event(s) missed\",\"pid\":\(pid),\"tid\":0,\"ts\":\(Self.microseconds(time))}")
    }

    /// Ends the document.
    mutating func finish() { writeAll(fd, Array("]}\n".utf8)) }

    /// The metadata records for the event's process and thread, once each.
    private mutating func name(_ event: PortTapEvent) {
        if namedProcesses.insert(event.pid).inserted {
            let process = "\(event.process ?? "?") (\(event.pid))"
            emit("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":\(event.pid),\"tid\":0,\"args\":{\"name\":\(Self.quoted(process))}}")
        }
        if namedThreads.insert(Int64(event.pid) << 32 | Int64(UInt32(bitPattern: event.tid))).inserted {
            emit("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":\(event.pid),\"tid\":\(event.tid),\"args\":{\"name\":\(Self.quoted(event.thread))}}")
        }
    }

    private mutating func emit(_ object: String) {
        writeAll(fd, Array(((wroteFirst ? ",\n" : "\n") + object).utf8))
        wroteFirst = true
    }

    /// Nanoseconds as microseconds with three decimals.
    static func microseconds(_ nanoseconds: Int64) -> String {
        let sign = nanoseconds < 0 ? "-" : ""
        let magnitude = nanoseconds.magnitude
        let fraction = String(magnitude % 1000)
        return sign + "\(magnitude / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    /// A JSON string.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case _ where scalar.value < 0x20: out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
