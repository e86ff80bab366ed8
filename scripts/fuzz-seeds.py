#!/usr/bin/env python3
"""Writes the wire fuzzer's seeds (docs/fuzzing.md) into the folder given:
the golden examples of docs/wire-format.md, as they are and combined, and
one input per size limit, which random mutation would hardly reach.

    scripts/fuzz-seeds.py OUTDIR

Each seed is in the fuzzer's input format (docs/fuzzing.md, "Input format").
The examples are read from the document itself, so that a change to them
changes the seeds."""
import os
import re
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OVERSIZED = 0x8000


def example(text, heading):
    """The frames of the example under `heading`: each `frame N (...)`
    line starts one, and the hex lines after it continue it."""
    block = text.split(heading, 1)[1].split("```", 2)[1]
    frames = []
    for line in block.strip().splitlines():
        if line.startswith("frame") or line.startswith("payload"):
            frames.append(bytearray())
            line = line.split(":", 1)[1]
        frames[-1] += bytes.fromhex("".join(re.findall(r"[0-9A-F]{2}", line)))
    return [bytes(frame) for frame in frames]


def frame(data, oversized=False):
    """A frame; an oversized one is a byte over the 64 MiB frame limit."""
    return struct.pack("<H", len(data) | (OVERSIZED if oversized else 0)) + data


def message(*frames):
    return struct.pack("<H", len(frames)) + b"".join(frames)


def messages(*encoded):
    return b"\x00" + b"".join(encoded)


def over_connection(home, *encoded):
    """Messages over a tcp connection whose sender's home frame is `home`."""
    return b"\x04" + message(frame(home)) + b"".join(encoded)


def payload(data):
    """A typed payload's bytes (docs/fuzzing.md: the target byte P)."""
    return b"P" + data


def name_file(data):
    return b"\x01" + data


def varint(value):
    """An unsigned LEB128 varint (docs/wire-format.md, "Version 5")."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out) + bytes([value])


def compact(flags, kinds, records, msgid=7, port_id=5, extra=b"", with_kinds=False):
    """A version-5 frame to the examples' destination instance 10..1F:
    EXTRA (a trace id, an extension area) goes after the kinds."""
    instance = bytes(range(0x10, 0x20))
    head = bytes([5, flags]) + instance + varint(port_id) + varint(msgid) + varint(len(kinds))
    return head + (bytes(kinds) if with_kinds else b"") + extra + b"".join(varint(len(r)) + r for r in records)


def header(version, flags, kinds, msgid=7):
    return b"RLKP" + bytes([version, flags]) + struct.pack("<HI", len(kinds), msgid) + bytes(kinds)


# The tap's batches (docs/tap-format.md), written from the document's
# tables: a foreign writer's reading of them.

def tap_batches(*encoded):
    return b"\x02" + b"".join(encoded)


def tap_name(kind, ident, text):
    data = text.encode()
    return struct.pack("<BBHI", kind, 0, len(data), ident) + data


def tap_header(names=(), records=0, version=1, header_size=64, record_size=80, magic=b"RLKT"):
    fixed = magic + struct.pack("<HHiIQqQQIIQ", version, header_size, 4242, record_size, 987654,
                                1_700_000_000_000_000_000, 10, 0, records, len(names), 0)
    return fixed + b"".join(names)


def tap_record(seq, kind=1, head=b"hello", head_length=None, tid=4243, destination=1, source=0, reason=0, trace=0x1f,
               msgid=7, call=None, w3c_trace_id=None):
    """A record of 80 bytes (versions 1 and 2), or with `call` (id, actor,
    method, role, outcome) one of 104 (version 3), and with `w3c_trace_id`
    (16 bytes, or b"" for none) one of 120 (version 4)."""
    head_length = len(head) if head_length is None else head_length
    record = (struct.pack("<QqQIIIiQIHHHBBB3x", seq, 5_000_000 + seq, trace, msgid, destination, source, tid,
                          len(head), len(head), 1, 0, reason, kind, 0, head_length)
              + head.ljust(16, b"\0")[:16])
    if call is not None:
        record += struct.pack("<QQIBB2x", *call)
    if w3c_trace_id is not None:
        record += w3c_trace_id.ljust(16, b"\0")
    return record


def tap_batch(header_frame, records=b""):
    return message(frame(header_frame), frame(records))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(ROOT, "docs", "wire-format.md")) as f:
        text = f.read()
    multipart = example(text, "## Example, multipart")
    (packed,) = example(text, "## Example, packed")
    (descriptor_v2,) = example(text, "## Example, a version-2 descriptor")
    descriptor_v1 = multipart[2]
    (descriptor_v3,) = example(text, "## Example, a version-3 descriptor")
    (packed_v3,) = example(text, "## Example, packed version 3 (tcp)")
    # The destination field alone: the extension area of the example.
    extension = packed_v3[13:13 + 32]
    (traced,) = example(text, "## Example, packed version 3 with a trace context")
    # Home frames and version 4: the welcome's home frame, the version-4
    # descriptor and the message carrying it.
    homes = example(text, "## Example, hello and welcome with home frames")
    (descriptor_v4,) = example(text, "## Example, a version-4 descriptor")
    (packed_v4,) = example(text, "## Example, packed version 3 with a version-4 reply port")
    # Fields 2 and 3 of that example: its extension area.
    trace_area = traced[13:13 + 4 + 51]
    record = lambda data: struct.pack("<I", len(data)) + data
    # Version 5: the example, and its short version-4 descriptor.
    (packed_v5,) = example(text, "## Example, packed version 5 with a short version-4 reply port")
    short_v4 = packed_v5[-4 + 1:]
    (typed,) = example(text, "## Example, a typed payload (binary)")
    (typed_json,) = example(text, "## Example, a typed payload (JSON)")
    seeds = {
        "doc-multipart": messages(message(*map(frame, multipart))),
        "doc-packed": messages(message(frame(packed))),
        "doc-multipart-v2-reply": messages(message(frame(multipart[0]), frame(multipart[1]), frame(descriptor_v2))),
        "doc-packed-v2-reply": messages(message(frame(header(2, 1, [0]) + record(b"hi") + record(descriptor_v2)))),
        # A stream, as a port receives it: the decoder's kept state (its
        # components array, its descriptor cache) between messages.
        "doc-stream": messages(message(frame(packed)), message(frame(packed)),
                               message(*map(frame, multipart)), message(frame(packed))),
        "doc-name-file-v1": name_file(descriptor_v1),
        "doc-name-file-v2": name_file(descriptor_v2),
        # A dead holder's file: the descriptor, then "DIED" and the time.
        "doc-name-file-v2-died": name_file(descriptor_v2 + b"DIED" + struct.pack("<q", 1_795_000_000_123_456_789)),
        # Version 3 (tcp): the example, a name file with a tcp descriptor,
        # a multipart version 3, an unknown field stepped over, and a bad one.
        "doc-packed-v3": messages(message(frame(packed_v3))),
        "doc-name-file-v3": name_file(descriptor_v3),
        "multipart-v3": messages(message(frame(header(3, 5, [0]) + extension), frame(b"hi"), frame(descriptor_v3))),
        "v3-unknown-field": messages(message(frame(header(3, 0, [0]) + struct.pack("<IHH", 7, 9, 3) + b"abc"
                                                   + record(b"hi")))),
        "v3-bad-extension": messages(message(frame(header(3, 0, [0]) + struct.pack("<IHH", 6, 9, 5) + b"ab"
                                                   + record(b"hi")))),
        # A trace context (fields 2 and 3): the example, multipart, beside
        # a destination, and a traceparent field one byte short.
        "doc-packed-v3-trace": messages(message(frame(traced))),
        "multipart-v3-trace": messages(message(frame(header(3, 4, [0]) + trace_area), frame(b"hi"))),
        "v3-trace-and-destination": messages(message(frame(header(3, 0, [0]) + struct.pack("<I", 28 + 51)
                                                           + extension[4:] + trace_area[4:] + record(b"hi")))),
        "v3-trace-short": messages(message(frame(header(3, 0, [0]) + struct.pack("<IHH", 29, 2, 25) + bytes(25)
                                                 + record(b"hi")))),
        # Version 4 over a connection: the example, a multipart message
        # with a version-4 component of a process that listens nowhere, a
        # stream, the same message with no home (refused) and a bad home.
        "doc-packed-v4": over_connection(homes[3], message(frame(packed_v4))),
        "multipart-v4": over_connection(homes[3], message(frame(header(3, 5, [0, 1]) + extension), frame(b"hi"),
                                                          frame(descriptor_v4[:6] + b"\xff" + descriptor_v4[7:]),
                                                          frame(descriptor_v4))),
        "v4-stream": over_connection(homes[3], message(frame(packed_v4)), message(frame(packed_v3)),
                                     message(frame(packed_v4))),
        "v4-no-home": messages(message(frame(packed_v4))),
        "v4-bad-home": over_connection(homes[3][:-1], message(frame(packed_v4))),
        # Version 5 over a connection: the example, a stream beside version
        # 3, port components (short and full) with a trace id and a trace
        # context, varints of every width, no home, and a varint cut short.
        "doc-packed-v5": over_connection(homes[3], message(frame(packed_v5))),
        "v5-stream": over_connection(homes[3], message(frame(packed_v5)), message(frame(packed_v4)),
                                     message(frame(packed_v5))),
        "v5-ports-and-trace": over_connection(homes[3], message(frame(compact(
            0b11011, [1, 0, 1], [short_v4, b"x", descriptor_v3, bytes([4, 255]) + varint(300)],
            extra=struct.pack("<Q", 0xDEADBEEF) + trace_area, with_kinds=True)))),
        "v5-varints": over_connection(homes[3], message(frame(compact(
            0, [0, 0], [bytes(200), b""], msgid=0xFFFFFFFF, port_id=(1 << 64) - 1)))),
        "v5-no-home": messages(message(frame(packed_v5))),
        "v5-cut-varint": over_connection(homes[3], message(frame(packed_v5[:18] + b"\x85"))),
        # A port component, not only a reply port.
        "port-component": messages(message(frame(header(2, 0, [1, 0]) + record(descriptor_v2) + record(b"x")))),
        # The limits, out of mutation's reach: a frame over 64 MiB, a
        # message over 256 MiB, over 256 components and over the frames kept.
        "frame-too-large": messages(message(frame(header(1, 0, [0])), frame(b"", oversized=True))),
        "message-too-large": messages(message(frame(header(1, 0, [0] * 5)),
                                              *[frame(b"", oversized=True) for _ in range(5)])),
        "too-many-components": messages(message(frame(header(2, 0, [0] * 257)))),
        "too-many-frames": messages(message(frame(header(1, 0, [0] * 256)), *[frame(b"") for _ in range(300)])),
        # Typed payloads: the examples, each refusal of the header, and a
        # value that reads but does not fit the fuzzer's type.
        "payload-doc-binary": payload(typed),
        "payload-doc-json": payload(typed_json),
        "payload-not-a-payload": payload(b"RLKP" + typed[4:]),
        "payload-unsupported-version": payload(typed[:4] + b"\x02" + typed[5:]),
        "payload-unknown-encoding": payload(typed[:5] + b"\x07" + typed[6:]),
        "payload-malformed": payload(typed[:-1]),
        "payload-shape": payload(typed[:6] + b"\x00\x00\x0A\x02\x02id\x03\x0E\x04kind\x07\x05large"),
        "payload-shape-json": payload(typed_json[:5] + b"\x01\x00\x00"
                                      + b'{"id":-1,"nested":[{"id":2,"tagged":{"named":{"name":"x","bytes":{"$bytes":"AAE="}}}}],'
                                      + b'"map":{"a":1},"real":"NaN","kind":"huge"}'),
    }
    names = [tap_name(4, 4242, "made-up"), tap_name(1, 1, "service"), tap_name(1, 2, "reply"),
             tap_name(2, 4243, "worker"), tap_name(3, 1, "timedOut")]
    two = tap_record(1) + tap_record(2, kind=2, source=2)
    seeds.update({
        # Two batches: the names come with the first, the second uses them.
        "tap-valid": tap_batches(tap_batch(tap_header(names, 2), two),
                                 tap_batch(tap_header((), 1), tap_record(3, kind=3, reason=1))),
        "tap-frame-count": tap_batches(message(frame(tap_header()))),
        "tap-short-header": tap_batches(tap_batch(tap_header()[:40])),
        "tap-bad-magic": tap_batches(tap_batch(tap_header(magic=b"RLKX"))),
        "tap-unsupported-version": tap_batches(tap_batch(tap_header(version=5))),
        # Version 3: records of 104 bytes with an actor call's fields; a
        # call sent (method: label 2) and its reply delivered, outcome value.
        "tap-v3-actor-call": tap_batches(tap_batch(
            tap_header(names + [tap_name(3, 2, "Greeter.greet(name:)")], 3, version=3, record_size=104),
            tap_record(1, msgid=0x52410001, source=2, call=(17, 3, 2, 1, 0))
            + tap_record(2, kind=2, msgid=0x52410002, destination=2, call=(17, 3, 2, 2, 1))
            + tap_record(3, call=(0, 0, 0, 0, 0)))),
        "tap-v3-short-record": tap_batches(tap_batch(tap_header((), 1, version=3), tap_record(1))),
        # Version 4: records of 120 bytes with a W3C trace id (docs/tap-format.md's
        # example, 4bf92f35…); a send and its delivery in the trace, a message outside it.
        "tap-v4-trace-context": tap_batches(tap_batch(
            tap_header(names, 3, version=4, record_size=120),
            tap_record(1, call=(0, 0, 0, 0, 0), w3c_trace_id=bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736"))
            + tap_record(2, kind=2, source=2, call=(0, 0, 0, 0, 0), w3c_trace_id=bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736"))
            + tap_record(3, call=(0, 0, 0, 0, 0), w3c_trace_id=b""))),
        "tap-v4-short-record": tap_batches(tap_batch(tap_header((), 1, version=4, record_size=104),
                                                     tap_record(1, call=(0, 0, 0, 0, 0)))),
        "tap-bad-actor-call": tap_batches(tap_batch(tap_header((), 1, version=3, record_size=104),
                                                    tap_record(1, call=(1, 1, 0, 9, 0)))),
        # Version 2: a tcp port's remote peer (name kind 5), and kind 5 in version 1.
        "tap-v2-peer": tap_batches(tap_batch(tap_header(names + [tap_name(5, 1, "tcp://10.0.0.1:7400 instance 000102")], 2, version=2), two)),
        "tap-v1-peer": tap_batches(tap_batch(tap_header([tap_name(5, 1, "tcp://10.0.0.1:7400")]))),
        "tap-bad-header-size": tap_batches(tap_batch(tap_header(header_size=200))),
        "tap-bad-record-size": tap_batches(tap_batch(tap_header(record_size=40))),
        "tap-record-count-mismatch": tap_batches(tap_batch(tap_header((), 2), tap_record(1))),
        "tap-bad-name": tap_batches(tap_batch(tap_header([tap_name(9, 1, "x")]))),
        "tap-bad-kind": tap_batches(tap_batch(tap_header((), 1), tap_record(1, kind=9))),
        "tap-bad-head-length": tap_batches(tap_batch(tap_header((), 1), tap_record(1, head_length=17))),
    })
    for name, seed in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(seed)


if __name__ == "__main__":
    main()
