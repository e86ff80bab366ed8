#!/usr/bin/env python3
"""A RunLoopKit peer in another language over tcp, written from
docs/wire-format.md ("tcp connections", "A message", "Port descriptor",
"Names over tcp") and docs/ports.md ("Keys across machines"), with pyzmq
(PyPI) and CURVE, as a program outside RunLoopKit would be.

    tcp_peer.py ENDPOINT SERVER_KEY SECRET_KEY_FILE NAME [home|compact|badhome]

Dials ENDPOINT (tcp://host:port) as a CURVE client of the server whose
public key is SERVER_KEY (40 characters of Z85), with the secret key in
SECRET_KEY_FILE (as curve.key: 40 characters of Z85 and a newline), says
hello expecting any instance, looks NAME up, and then:

- sends msgid 1 "from python" to the port it found, with a reply port of
  its own (port id 7, no endpoint: it listens nowhere), and reads the reply;
- sends that port two malformed messages (bad magic; a data record that
  runs past the frame), then msgid 1 "after malformed", and reads the reply;
- looks up "no-such-name".

It prints, one per line:

    WELCOMED <the server's instance, 32 hex digits>
    HOME <the server's pid> <its endpoints, separated by spaces>   (with "home")
    FOUND <port id> <endpoint> v<the descriptor's version>
    REPLY from python
    REPLY after malformed
    NOTFOUND <the server's reason>
    DONE

With "badhome", its hello's home frame is a byte short: no welcome comes
("REFUSED"). With "home", its hello carries a home frame (no endpoints): it reads
version-4 descriptors, which the server then writes for its own ports,
resolved against the server's home frame, which comes with the welcome;
its own reply port goes as a version-4 descriptor too. Without it, the
welcome is one frame and every descriptor version 3. With "compact", its
hello carries a home frame and a reads frame (it reads version 5): the
welcome has three frames, every message it sends is version 5, and every
answer must be version 5 too (its short version-4 descriptors read as
the 16-byte ones).

It exits 0; "REFUSED" and status 3 when no welcome comes within 5 s (the
server did not accept this key); "ERROR <text>" and status 1 otherwise.
"""
import os
import struct
import sys

import zmq

MESSAGE_MAGIC = b"RLKP"
DESCRIPTOR_MAGIC = b"RLKD"
CONTROL_MAGIC = b"RLKC"
# "RLKC", version 1, type 4 (reads), then the newest message version read.
READS_FRAME = CONTROL_MAGIC + bytes([1, 4, 5])
DATA, PORT = 0, 1
NAME_SERVICE_PORT = 0
LOOKUP, FOUND, NOT_FOUND = 1, 1, 2
MY_PORT = 7
TIMEOUT_MS = 5000


class PeerError(Exception):
    pass


def my_descriptor(instance, relative):
    """A tcp descriptor of a port of a process that only connects: version
    3, or version 4 (relative to the connection, no endpoint: 255)."""
    if relative:
        return DESCRIPTOR_MAGIC + bytes([4, 2, 255, 0]) + struct.pack("<Q", MY_PORT)
    return (DESCRIPTOR_MAGIC + bytes([3, 2]) + struct.pack("<H", 0)
            + struct.pack("<iQQ", os.getpid(), 0, MY_PORT)
            + instance + bytes([0]) + bytes(32))


def home_frame():
    """This process's home frame: its pid, start time 0, no endpoints."""
    return CONTROL_MAGIC + bytes([1, 3]) + struct.pack("<iQ", os.getpid(), 0) + bytes([0])


def parse_home(frame):
    """(pid, [endpoint]) of a home frame; each endpoint's security byte and
    key are stepped over."""
    if frame[:6] != CONTROL_MAGIC + bytes([1, 3]):
        raise PeerError("not a home frame: %s" % frame[:8].hex())
    pid, _ = struct.unpack_from("<iQ", frame, 6)
    count, offset, endpoints = frame[18], 19, []
    for _ in range(count):
        length = frame[offset + 33]
        endpoints.append(frame[offset + 34:offset + 34 + length].decode("ascii"))
        offset += 34 + length
    if offset != len(frame):
        raise PeerError("a home frame with bytes after its endpoints")
    return pid, endpoints


def packed_message(destination, port_id, msgid, components, reply_port=None):
    """A version-3 packed message: header, extension area (a destination
    field), then one record per component and the reply port."""
    flags = 1 if reply_port is not None else 0
    header = (MESSAGE_MAGIC + bytes([3, flags]) + struct.pack("<HI", len(components), msgid)
              + bytes(kind for kind, _ in components))
    extension = struct.pack("<HH", 1, 24) + destination + struct.pack("<Q", port_id)
    records = [body for _, body in components] + ([reply_port] if reply_port is not None else [])
    return (header + struct.pack("<I", len(extension)) + extension
            + b"".join(struct.pack("<I", len(body)) + body for body in records))


def varint(value):
    """An unsigned LEB128 varint: 7 bits a byte, the lowest first."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out) + bytes([value])


def read_varint(frame, offset):
    """(value, offset after it) of the varint at OFFSET."""
    value, shift = 0, 0
    while True:
        if offset >= len(frame) or shift > 63:
            raise PeerError("a varint runs past the frame")
        byte = frame[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, offset
        shift += 7


def compact_descriptor(descriptor):
    """A version-4 descriptor in the short form version 5 writes."""
    if len(descriptor) == 16 and descriptor[4] == 4:
        (port_id,) = struct.unpack_from("<Q", descriptor, 8)
        return bytes([4, descriptor[6]]) + varint(port_id)
    return descriptor


def compact_message(destination, port_id, msgid, components, reply_port=None):
    """A version-5 message: version, flags, the destination's instance,
    its port id, the msgid and the count as varints, the kinds if any
    component is a port, then each record as a varint length and bytes."""
    kinds = bytes(kind for kind, _ in components)
    flags = (1 if reply_port is not None else 0) | (16 if PORT in kinds else 0)
    header = (bytes([5, flags]) + destination + varint(port_id) + varint(msgid) + varint(len(components))
              + (kinds if flags & 16 else b""))
    records = [body if kind == DATA else compact_descriptor(body) for kind, body in components]
    records += [compact_descriptor(reply_port)] if reply_port is not None else []
    return header + b"".join(varint(len(body)) + body for body in records)


def parse_compact_message(frame, instance):
    """msgid, components and the reply descriptor of a version-5 message
    to INSTANCE; a short version-4 descriptor comes back in its 16-byte form."""
    flags = frame[1]
    if flags & ~(1 | 2 | 8 | 16) or frame[2:18] != instance:
        raise PeerError("a version-5 message with unknown flags, or for another instance: %s" % frame[:18].hex())
    _, offset = read_varint(frame, 18)
    msgid, offset = read_varint(frame, offset)
    count, offset = read_varint(frame, offset)
    kinds = frame[offset:offset + count] if flags & 16 else bytes(count)
    offset += (count if flags & 16 else 0) + (8 if flags & 2 else 0)
    if flags & 8:
        (extension_length,) = struct.unpack_from("<I", frame, offset)
        offset += 4 + extension_length
    bodies = []
    for index in range(count + (1 if flags & 1 else 0)):
        length, offset = read_varint(frame, offset)
        body = frame[offset:offset + length]
        offset += length
        if (index == count or kinds[index] == PORT) and body[:1] == bytes([4]):
            port_id, end = read_varint(body, 2)
            if end != len(body):
                raise PeerError("a short version-4 descriptor with bytes after its port id")
            body = DESCRIPTOR_MAGIC + bytes([4, 2, body[1], 0]) + struct.pack("<Q", port_id)
        bodies.append(body)
    if offset != len(frame):
        raise PeerError("records do not end with the frame")
    reply = bodies[count] if flags & 1 else None
    return msgid, list(zip(kinds, bodies[:count])), reply


def parse_message(frame, instance=None):
    """msgid, components [(kind, bytes)] and the reply descriptor of a
    packed message (versions 2, 3 and 5)."""
    if frame[:1] == bytes([5]) and instance is not None:
        return parse_compact_message(frame, instance)
    if frame[:4] != MESSAGE_MAGIC or frame[4] not in (2, 3):
        raise PeerError("not a packed message: %s" % frame[:8].hex())
    flags = frame[5]
    count, msgid = struct.unpack_from("<HI", frame, 6)
    kinds = frame[12:12 + count]
    offset = 12 + count + (8 if flags & 2 else 0)
    if frame[4] == 3:
        if flags & 4:
            raise PeerError("a multipart message, where one frame came")
        (extension_length,) = struct.unpack_from("<I", frame, offset)
        offset += 4 + extension_length
    bodies = []
    for _ in range(count + (1 if flags & 1 else 0)):
        (length,) = struct.unpack_from("<I", frame, offset)
        bodies.append(frame[offset + 4:offset + 4 + length])
        offset += 4 + length
    if offset != len(frame):
        raise PeerError("records do not end with the frame")
    reply = bodies[count] if flags & 1 else None
    return msgid, list(zip(kinds, bodies[:count])), reply


def parse_tcp_descriptor(descriptor, server, home):
    """(instance, port id, endpoint, version) of a version-3 descriptor, or
    of a version-4 one read against the server's instance and home."""
    if descriptor[:4] != DESCRIPTOR_MAGIC or descriptor[4] not in (3, 4) or descriptor[5] != 2:
        raise PeerError("not a tcp descriptor: %s" % descriptor[:8].hex())
    if descriptor[4] == 4:
        if home is None or len(descriptor) != 16:
            raise PeerError("a version-4 descriptor where none may come: %s" % descriptor.hex())
        (port_id,) = struct.unpack_from("<Q", descriptor, 8)
        endpoint = "" if descriptor[6] == 255 else home[1][descriptor[6]]
        return server, port_id, endpoint, 4
    (length,) = struct.unpack_from("<H", descriptor, 6)
    (port_id,) = struct.unpack_from("<Q", descriptor, 20)
    return descriptor[28:44], port_id, descriptor[77:77 + length].decode("ascii"), 3


def receive(socket):
    if not socket.poll(TIMEOUT_MS):
        raise PeerError("no message within %d ms" % TIMEOUT_MS)
    return socket.recv()


class Codec:
    """Version 3 out and versions 2 and 3 in; or, for a peer that said it
    reads version 5 (COMPACT_TO: its own instance), version 5 both ways."""

    def __init__(self, compact_to=None):
        self.compact_to = compact_to

    def message(self, destination, port_id, msgid, components, reply_port=None):
        write = compact_message if self.compact_to is not None else packed_message
        return write(destination, port_id, msgid, components, reply_port)

    def parse(self, frame):
        if self.compact_to is not None and frame[:1] != bytes([5]):
            raise PeerError("a version-%d answer to a peer that reads version 5" % frame[4])
        return parse_message(frame, self.compact_to)


def lookup(socket, server, home, mine, name, codec=None):
    codec = codec or Codec()
    socket.send(codec.message(server, NAME_SERVICE_PORT, LOOKUP, [(DATA, name.encode())], mine))
    msgid, components, _ = codec.parse(receive(socket))
    if msgid == FOUND and len(components) == 1 and components[0][0] == PORT:
        return parse_tcp_descriptor(components[0][1], server, home), None
    if msgid == NOT_FOUND and components and components[0][0] == DATA:
        return None, components[0][1].decode()
    raise PeerError("an answer docs/wire-format.md does not describe: msgid %d" % msgid)


def request(socket, server, port_id, mine, text, codec=None):
    codec = codec or Codec()
    socket.send(codec.message(server, port_id, 1, [(DATA, text.encode())], mine))
    msgid, components, _ = codec.parse(receive(socket))
    return components[0][1].decode() if components else ""


def connect(endpoint, server_key, secret_key_file):
    """A CURVE DEALER dialling ENDPOINT, its routing id a fresh instance:
    (context, socket, instance)."""
    with open(secret_key_file, "rb") as file:
        secret = file.read().strip()
    instance = os.urandom(16)
    context = zmq.Context()
    socket = context.socket(zmq.DEALER)
    socket.setsockopt(zmq.LINGER, 0)
    socket.setsockopt(zmq.ROUTING_ID, instance)
    socket.curve_secretkey = secret
    socket.curve_publickey = zmq.curve_public(secret)
    socket.curve_serverkey = server_key.encode()
    socket.connect(endpoint)
    return context, socket, instance


def main(endpoint, server_key, secret_key_file, name, mode=""):
    compact = mode == "compact"
    with_home = mode == "home" or compact
    expected_frames = 3 if compact else 2 if with_home else 1
    context, socket, instance = connect(endpoint, server_key, secret_key_file)
    try:
        hello = CONTROL_MAGIC + bytes([1, 1]) + instance + bytes(16)
        if mode == "badhome":
            # A home frame cut short: the server drops the hello, and no welcome comes.
            socket.send_multipart([hello, home_frame()[:-1]])
        else:
            socket.send_multipart([hello, home_frame(), READS_FRAME][:expected_frames])
        if not socket.poll(TIMEOUT_MS):
            print("REFUSED", flush=True)
            return 3
        frames = socket.recv_multipart()
        welcome = frames[0]
        if len(welcome) != 22 or welcome[:6] != CONTROL_MAGIC + bytes([1, 2]):
            raise PeerError("not a welcome: %s" % welcome.hex())
        if len(frames) != expected_frames:
            raise PeerError("a welcome of %d frames to a hello of %d" % (len(frames), expected_frames))
        if compact and frames[2] != READS_FRAME:
            raise PeerError("a welcome whose third frame is not a reads frame of version 5: %s" % frames[2].hex())
        codec = Codec(instance if compact else None)
        server = welcome[6:22]
        print("WELCOMED %s" % server.hex(), flush=True)
        home = parse_home(frames[1]) if with_home else None
        if home is not None:
            print("HOME %d %s" % (home[0], " ".join(home[1])), flush=True)
        mine = my_descriptor(instance, with_home)

        found, reason = lookup(socket, server, home, mine, name, codec)
        if found is None:
            raise PeerError("%s not found: %s" % (name, reason))
        owner, port_id, where, version = found
        if owner != server:
            raise PeerError("the name's port belongs to another instance")
        print("FOUND %d %s v%d" % (port_id, where, version), flush=True)
        print("REPLY %s" % request(socket, server, port_id, mine, "from python", codec), flush=True)

        socket.send(b"XXXX" + bytes(40))
        broken = bytearray(codec.message(server, port_id, 1, [(DATA, b"abc")]))
        # The record's length, before its three bytes: 100, past the frame.
        if compact:
            broken[len(broken) - 4] = 100
        else:
            struct.pack_into("<I", broken, len(broken) - 7, 100)
        socket.send(bytes(broken))
        print("REPLY %s" % request(socket, server, port_id, mine, "after malformed", codec), flush=True)

        found, reason = lookup(socket, server, home, mine, "no-such-name", codec)
        if found is not None:
            raise PeerError("no-such-name was found")
        print("NOTFOUND %s" % reason, flush=True)
        print("DONE", flush=True)
        return 0
    finally:
        socket.close()
        context.term()


def run(main, usage, errors=(PeerError,)):
    """Runs a peer's main with its four arguments (and a fifth, if its main
    takes one): status 2 and `usage` without them, "ERROR <text>" and
    status 1 for one of `errors`."""
    if len(sys.argv) not in (5, 6):
        print(usage, file=sys.stderr)
        sys.exit(2)
    try:
        sys.exit(main(*sys.argv[1:]))
    except errors as error:
        print("ERROR %s" % error, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    run(main, __doc__)
