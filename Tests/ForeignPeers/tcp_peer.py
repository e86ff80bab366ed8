#!/usr/bin/env python3
"""A RunLoopKit peer in another language over tcp, written from
docs/wire-format.md ("tcp connections", "A message", "Port descriptor",
"Names over tcp") and docs/ports.md ("Keys across machines"), with pyzmq
(PyPI) and CURVE, as a program outside RunLoopKit would be.

    tcp_peer.py ENDPOINT SERVER_KEY SECRET_KEY_FILE NAME [home|badhome]

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
welcome is one frame and every descriptor version 3.

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


def parse_message(frame):
    """msgid, components [(kind, bytes)] and the reply descriptor of a
    packed message (versions 2 and 3)."""
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


def lookup(socket, server, home, mine, name):
    socket.send(packed_message(server, NAME_SERVICE_PORT, LOOKUP, [(DATA, name.encode())], mine))
    msgid, components, _ = parse_message(receive(socket))
    if msgid == FOUND and len(components) == 1 and components[0][0] == PORT:
        return parse_tcp_descriptor(components[0][1], server, home), None
    if msgid == NOT_FOUND and components and components[0][0] == DATA:
        return None, components[0][1].decode()
    raise PeerError("an answer docs/wire-format.md does not describe: msgid %d" % msgid)


def request(socket, server, port_id, mine, text):
    socket.send(packed_message(server, port_id, 1, [(DATA, text.encode())], mine))
    msgid, components, _ = parse_message(receive(socket))
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
    with_home = mode == "home"
    context, socket, instance = connect(endpoint, server_key, secret_key_file)
    try:
        hello = CONTROL_MAGIC + bytes([1, 1]) + instance + bytes(16)
        if mode == "badhome":
            # A home frame cut short: the server drops the hello, and no welcome comes.
            socket.send_multipart([hello, home_frame()[:-1]])
        else:
            socket.send_multipart([hello, home_frame()] if with_home else [hello])
        if not socket.poll(TIMEOUT_MS):
            print("REFUSED", flush=True)
            return 3
        frames = socket.recv_multipart()
        welcome = frames[0]
        if len(welcome) != 22 or welcome[:6] != CONTROL_MAGIC + bytes([1, 2]):
            raise PeerError("not a welcome: %s" % welcome.hex())
        if len(frames) != (2 if with_home else 1):
            raise PeerError("a welcome of %d frames to a hello of %d" % (len(frames), 2 if with_home else 1))
        server = welcome[6:22]
        print("WELCOMED %s" % server.hex(), flush=True)
        home = parse_home(frames[1]) if with_home else None
        if home is not None:
            print("HOME %d %s" % (home[0], " ".join(home[1])), flush=True)
        mine = my_descriptor(instance, with_home)

        found, reason = lookup(socket, server, home, mine, name)
        if found is None:
            raise PeerError("%s not found: %s" % (name, reason))
        owner, port_id, where, version = found
        if owner != server:
            raise PeerError("the name's port belongs to another instance")
        print("FOUND %d %s v%d" % (port_id, where, version), flush=True)
        print("REPLY %s" % request(socket, server, port_id, mine, "from python"), flush=True)

        socket.send(b"XXXX" + bytes(40))
        broken = bytearray(packed_message(server, port_id, 1, [(DATA, b"abc")]))
        struct.pack_into("<I", broken, len(broken) - 7, 100)
        socket.send(bytes(broken))
        print("REPLY %s" % request(socket, server, port_id, mine, "after malformed"), flush=True)

        found, reason = lookup(socket, server, home, mine, "no-such-name")
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
