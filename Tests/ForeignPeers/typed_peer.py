#!/usr/bin/env python3
"""A Python peer that speaks typed payloads (docs/wire-format.md, "Typed
payloads"), over tcp as tcp_peer.py does (whose connection and message code
it uses), written from the documents alone.

    typed_peer.py ENDPOINT SERVER_KEY SECRET_KEY_FILE NAME

Looks NAME up, then sends its port, in binary and then in JSON, the typed
request `RunLoopKitPortsTests.Question` {text, copies: 2, extra: its own
port, as a port component}, with its own port as the reply port too, and
reads three messages each time: the reply (an `Answer`, msgid 1) and the
two extra copies the server sends to the port inside the question (msgid
0). It prints, one per line:

    ANSWER <encoding> <the answer's lines, joined by "|"> <its from>
    EXTRA <encoding> <the extra's lines, joined by "|">   (twice)
    DONE

and exits 0; "ERROR <text>" and status 1 otherwise."""

import tcp_peer
import typed_payload as typed

QUESTION = "RunLoopKitPortsTests.Question"
ANSWER = "RunLoopKitPortsTests.Answer"


def main(endpoint, server_key, secret_key_file, name):
    context, socket, instance = tcp_peer.connect(endpoint, server_key, secret_key_file)
    try:
        socket.send(tcp_peer.CONTROL_MAGIC + bytes([1, 1]) + instance + bytes(16))
        welcome = tcp_peer.receive(socket)
        server = welcome[6:22]
        mine = tcp_peer.my_descriptor(instance, False)
        found, reason = tcp_peer.lookup(socket, server, None, mine, name)
        if found is None:
            raise tcp_peer.PeerError("%s not found: %s" % (name, reason))
        _, port_id, _, _ = found
        for encoding, label in ((typed.BINARY, "binary"), (typed.JSON, "json")):
            question = typed.payload(QUESTION, {"text": "from python", "copies": 2, "extra": typed.PortRef(0)}, encoding)
            socket.send(tcp_peer.packed_message(server, port_id, 1, [(tcp_peer.DATA, question), (tcp_peer.PORT, mine)], mine))
            for _ in range(3):
                msgid, components, _ = tcp_peer.parse_message(tcp_peer.receive(socket))
                type_name, got_encoding, value = typed.read(components[0][1])
                if type_name != ANSWER:
                    raise tcp_peer.PeerError("a payload of %s, not %s" % (type_name, ANSWER))
                if msgid == 1:
                    if got_encoding != encoding:
                        raise tcp_peer.PeerError("the reply came in encoding %d, the request's was %d" % (got_encoding, encoding))
                    print("ANSWER %s %s %d" % (label, "|".join(value["lines"]), value["from"]), flush=True)
                else:
                    print("EXTRA %s %s" % (label, "|".join(value["lines"])), flush=True)
        print("DONE", flush=True)
        return 0
    finally:
        socket.close()
        context.term()


if __name__ == "__main__":
    tcp_peer.run(main, __doc__, (tcp_peer.PeerError, typed.PayloadError))
