"""Typed payloads (docs/wire-format.md, "Typed payloads"), written from the
document alone: a Python value to a payload's bytes and back.

Values map as the document's tree: None, bool, int (signed: tag 03; an
int wrapped in Unsigned: tag 04), float (tag 06, a Double), str, bytes,
list (an array), dict (a keyed container, its keys in insertion order)
and PortRef (a port: the index of a port component)."""
import json
import struct

MAGIC = b"RLKV"
VERSION = 1
BINARY, JSON = 0, 1


class PayloadError(Exception):
    pass


class PortRef:
    """A port inside a value: the index of a port component of the message."""

    def __init__(self, index):
        self.index = index

    def __eq__(self, other):
        return isinstance(other, PortRef) and other.index == self.index

    def __repr__(self):
        return "PortRef(%d)" % self.index


class Unsigned(int):
    """An integer written with the unsigned tag (a Swift UInt)."""


def varint(number):
    out = bytearray()
    while number >= 0x80:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def text(string):
    data = string.encode("utf-8")
    return varint(len(data)) + data


def encode_binary(value):
    if value is None:
        return b"\x00"
    if value is True:
        return b"\x02"
    if value is False:
        return b"\x01"
    if isinstance(value, Unsigned):
        return b"\x04" + varint(int(value))
    if isinstance(value, int):
        return b"\x03" + varint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)
    if isinstance(value, float):
        return b"\x06" + struct.pack("<d", value)
    if isinstance(value, str):
        return b"\x07" + text(value)
    if isinstance(value, bytes):
        return b"\x08" + varint(len(value)) + value
    if isinstance(value, list):
        return b"\x09" + varint(len(value)) + b"".join(encode_binary(element) for element in value)
    if isinstance(value, dict):
        return b"\x0A" + varint(len(value)) + b"".join(text(key) + encode_binary(entry) for key, entry in value.items())
    if isinstance(value, PortRef):
        return b"\x0B" + varint(value.index)
    raise PayloadError("cannot encode %r" % (value,))


def to_json(value):
    if isinstance(value, bytes):
        import base64
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, PortRef):
        return {"$port": value.index}
    if isinstance(value, list):
        return [to_json(element) for element in value]
    if isinstance(value, dict):
        return {key: to_json(entry) for key, entry in value.items()}
    return value


def payload(type_name, value, encoding=BINARY):
    """A payload's bytes: the header, then the body in the encoding."""
    name = type_name.encode("utf-8")
    body = encode_binary(value) if encoding == BINARY else json.dumps(to_json(value), separators=(",", ":")).encode()
    return MAGIC + bytes([VERSION, encoding]) + struct.pack("<H", len(name)) + name + body


class Reader:
    def __init__(self, data):
        self.data = data
        self.offset = 0

    def byte(self):
        if self.offset >= len(self.data):
            raise PayloadError("cut short at byte %d" % self.offset)
        self.offset += 1
        return self.data[self.offset - 1]

    def varint(self):
        number, shift = 0, 0
        while True:
            byte = self.byte()
            number |= (byte & 0x7F) << shift
            if byte & 0x80 == 0:
                return number
            shift += 7

    def take(self, count):
        if count > len(self.data) - self.offset:
            raise PayloadError("cut short at byte %d" % self.offset)
        self.offset += count
        return self.data[self.offset - count:self.offset]

    def value(self):
        tag = self.byte()
        if tag == 0x00:
            return None
        if tag in (0x01, 0x02):
            return tag == 0x02
        if tag == 0x03:
            zigzag = self.varint()
            return (zigzag >> 1) ^ -(zigzag & 1)
        if tag == 0x04:
            return Unsigned(self.varint())
        if tag == 0x05:
            return struct.unpack("<f", self.take(4))[0]
        if tag == 0x06:
            return struct.unpack("<d", self.take(8))[0]
        if tag == 0x07:
            return self.take(self.varint()).decode("utf-8")
        if tag == 0x08:
            return bytes(self.take(self.varint()))
        if tag == 0x09:
            return [self.value() for _ in range(self.varint())]
        if tag == 0x0A:
            entries = {}
            for _ in range(self.varint()):
                key = self.take(self.varint()).decode("utf-8")
                entries[key] = self.value()
            return entries
        if tag == 0x0B:
            return PortRef(self.varint())
        raise PayloadError("unknown tag %02x" % tag)


def from_json(value):
    if isinstance(value, dict) and len(value) == 1 and "$port" in value:
        return PortRef(value["$port"])
    if isinstance(value, dict) and len(value) == 1 and "$bytes" in value:
        import base64
        return base64.b64decode(value["$bytes"])
    if isinstance(value, list):
        return [from_json(element) for element in value]
    if isinstance(value, dict):
        return {key: from_json(entry) for key, entry in value.items()}
    return value


def read(data):
    """(type name, encoding, value) of a payload's bytes."""
    if data[:4] != MAGIC:
        raise PayloadError("not a typed payload")
    if data[4] != VERSION:
        raise PayloadError("payload version %d" % data[4])
    encoding = data[5]
    (length,) = struct.unpack_from("<H", data, 6)
    name = data[8:8 + length].decode("utf-8")
    body = data[8 + length:]
    if encoding == BINARY:
        reader = Reader(body)
        value = reader.value()
        if reader.offset != len(body):
            raise PayloadError("bytes after the value")
    elif encoding == JSON:
        value = from_json(json.loads(body.decode("utf-8")))
    else:
        raise PayloadError("encoding %d" % encoding)
    return name, encoding, value
