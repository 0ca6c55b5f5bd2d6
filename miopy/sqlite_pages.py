"""What a damaged SQLite file still holds, read page by page without SQLite (sqlite.org/fileformat.html).

SQLite stops at the first damaged page it meets on a walk from a table's root, so one bad page can hide
every row after it. Table rows live in leaf pages, and every leaf that is still whole can be read on its
own: ``scan`` parses each page of the file that is a b-tree page and not on the freelist, returning the
rows of the table leaves (rowid and column values), the keys of the index pages (whose last value is the
rowid of the row they index, so rows whose leaf was lost can still be counted), and how many pages could
not be read. It knows nothing of any schema: the caller decides which rows are its own and valid.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

HEADER = b"SQLite format 3\x00"
TABLE_LEAF, TABLE_INTERIOR, INDEX_LEAF, INDEX_INTERIOR = 0x0D, 0x05, 0x0A, 0x02
Value = int | float | str | bytes | None


class PageError(ValueError):
    """A page (or a record on it) that does not parse."""


@dataclass
class Scan:
    """What scan() read: table rows (rowid, values), index keys (values, the rowid last), unreadable pages."""

    rows: list[tuple[int, tuple[Value, ...]]] = field(default_factory=list)
    index_keys: list[tuple[Value, ...]] = field(default_factory=list)
    leaf_pages: int = 0
    unreadable: int = 0


def scan(blob: bytes) -> Scan:
    """Every row and index key on the readable b-tree pages of a SQLite file's bytes; PageError when the
    file header itself is not SQLite's (then nothing can be located)."""
    if not blob.startswith(HEADER) or len(blob) < 100:
        raise PageError("no SQLite header")
    size = struct.unpack(">H", blob[16:18])[0]
    page_size = 65536 if size == 1 else size
    if page_size < 512 or page_size & (page_size - 1):
        raise PageError(f"page size {size} in the header")
    usable = page_size - blob[20]
    pages = len(blob) // page_size
    free, overflow = _free_pages(blob, page_size, pages), set[int]()
    result, unknown = Scan(), []
    for number in range(1, pages + 1):
        if number in free:
            continue
        page = blob[(number - 1) * page_size:number * page_size]
        try:
            if not _read_page(blob, page, number, page_size, usable, result, overflow):
                unknown.append(number)   # no b-tree page: an overflow page, else a damaged one
        except (PageError, IndexError, struct.error, UnicodeDecodeError):
            result.unreadable += 1
    result.unreadable += sum(number not in overflow for number in unknown)
    return result


def _free_pages(blob: bytes, page_size: int, pages: int) -> set[int]:
    """Freelist trunk and leaf pages (their bytes are stale); as many as the readable trunks name."""
    free: set[int] = set()
    trunk = struct.unpack(">I", blob[32:36])[0]
    while 0 < trunk <= pages and trunk not in free:
        free.add(trunk)
        start = (trunk - 1) * page_size
        following, count = struct.unpack(">II", blob[start:start + 8])
        if count > (page_size - 8) // 4:
            break
        leaves = struct.unpack(f">{count}I", blob[start + 8:start + 8 + 4 * count])
        free.update(p for p in leaves if 0 < p <= pages)
        trunk = following
    return free


def _read_page(blob: bytes, page: bytes, number: int, page_size: int, usable: int, result: Scan,
               overflow_pages: set[int]) -> bool:
    """Add a b-tree page's rows or keys to result (and the overflow pages its cells use to overflow_pages);
    False when it is no b-tree page."""
    start = 100 if number == 1 else 0
    kind = page[start]
    if kind not in (TABLE_LEAF, TABLE_INTERIOR, INDEX_LEAF, INDEX_INTERIOR):
        return False
    cells = struct.unpack(">H", page[start + 3:start + 5])[0]
    header = start + (8 if kind in (TABLE_LEAF, INDEX_LEAF) else 12)
    if header + 2 * cells > usable:
        raise PageError(f"page {number}: {cells} cells do not fit")
    found: list = []
    for i in range(cells):
        offset = struct.unpack(">H", page[header + 2 * i:header + 2 * i + 2])[0]
        if not header + 2 * cells <= offset < usable:
            raise PageError(f"page {number}: cell {i} at {offset}")
        if kind == TABLE_INTERIOR:
            continue
        if kind == INDEX_INTERIOR:
            offset += 4   # the left child's page number
        payload_size, offset = _varint(page, offset)
        rowid = None
        if kind == TABLE_LEAF:
            rowid, offset = _varint(page, offset)
        payload = _payload(blob, page, offset, payload_size, page_size, usable, kind == TABLE_LEAF, overflow_pages)
        found.append((rowid, _record(payload)))
    if kind == TABLE_LEAF:
        result.rows.extend((rowid, values) for rowid, values in found)
        result.leaf_pages += 1
    else:
        result.index_keys.extend(values for _, values in found)
    return True


def _payload(blob: bytes, page: bytes, offset: int, size: int, page_size: int, usable: int, table: bool,
             overflow_pages: set[int]) -> bytes:
    """A cell's payload: the part on its page, then its overflow chain."""
    most = usable - 35 if table else (usable - 12) * 64 // 255 - 23
    if size <= most:
        if offset + size > usable:
            raise PageError("payload runs past its page")
        return page[offset:offset + size]
    least = (usable - 12) * 32 // 255 - 23
    local = least + (size - least) % (usable - 4)
    local = least if local > most else local
    parts = [page[offset:offset + local]]
    following = struct.unpack(">I", page[offset + local:offset + local + 4])[0]
    remaining, seen = size - local, set()
    while remaining > 0:
        if following == 0 or following in seen or following * page_size > len(blob):
            raise PageError("broken overflow chain")
        seen.add(following)
        overflow_pages.add(following)
        chunk = blob[(following - 1) * page_size:following * page_size]
        following = struct.unpack(">I", chunk[:4])[0]
        parts.append(chunk[4:4 + min(remaining, usable - 4)])
        remaining -= usable - 4
    return b"".join(parts)


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    value = 0
    for i in range(9):
        byte = data[offset + i]
        if i == 8:
            return (value << 8) | byte, offset + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, offset + i + 1
    raise AssertionError("unreachable")


_INT_BYTES = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6, 6: 8}


def _record(payload: bytes) -> tuple[Value, ...]:
    """The column values of one record (SQLite's record format; text is UTF-8)."""
    header_size, offset = _varint(payload, 0)
    if not 0 < header_size <= len(payload):
        raise PageError(f"record header of {header_size} bytes")
    types = []
    while offset < header_size:
        serial, offset = _varint(payload, offset)
        types.append(serial)
    body, values = header_size, []
    for serial in types:
        value, body = _value(payload, body, serial)
        values.append(value)
    if body != len(payload):
        raise PageError("record body does not fill its payload")
    return tuple(values)


def _value(payload: bytes, at: int, serial: int) -> tuple[Value, int]:
    if serial in (0, 8, 9):
        return (None, 0, 1)[0 if serial == 0 else serial - 7], at
    if serial in _INT_BYTES:
        size = _INT_BYTES[serial]
        raw = payload[at:at + size]
        if len(raw) != size:
            raise PageError("integer past the record")
        return int.from_bytes(raw, "big", signed=True), at + size
    if serial == 7:
        return struct.unpack(">d", payload[at:at + 8])[0], at + 8
    if serial < 12:
        raise PageError(f"serial type {serial}")
    size = (serial - 12) // 2
    raw = payload[at:at + size]
    if len(raw) != size:
        raise PageError("text or blob past the record")
    return (raw.decode("utf-8") if serial % 2 else bytes(raw)), at + size
