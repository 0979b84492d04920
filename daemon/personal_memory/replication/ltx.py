"""Litestream 0.5's LTX files, read only far enough to scan their pages for text: each
page is LZ4-compressed on its own, so a raw scan of the file misses what a purge erased
(LZ4 keeps short text literal but splits anything it has seen before)."""

from __future__ import annotations

import struct
from pathlib import Path

from ..errors import ReplicationError

MAGIC = b"LTX1"
HEADER_SIZE = 100
HEADER_FLAG_COMPRESS_LZ4 = 1  # an older writer: one LZ4 frame over every page
PAGE_FLAG_SIZE = 1  # a four-byte size, then one LZ4 block, follows the page header


def lz4_missing() -> str | None:
    """Why LTX pages cannot be read here, or None."""
    try:
        import lz4.block  # noqa: F401
        import lz4.frame  # noqa: F401
    except ImportError:
        return ("the lz4 package is not installed (pip install 'personal-memory[replication]'), "
                "so the replica's compressed LTX pages cannot be read")
    return None


def pages(data: bytes, name: str = "LTX file") -> bytes:
    """Every page an LTX file holds, decompressed and joined in file order (a text that
    runs over consecutive pages is found whole)."""
    import lz4.block
    import lz4.frame
    if data[:4] != MAGIC or len(data) < HEADER_SIZE:
        raise ReplicationError(f"{name} is not an LTX file")
    flags, page_size = struct.unpack(">II", data[4:12])
    body = data[HEADER_SIZE:]
    if flags & HEADER_FLAG_COMPRESS_LZ4:
        return _frame(body, name)
    out, at = [], 0
    try:
        while True:
            pgno, pflags = struct.unpack(">IH", body[at:at + 6])
            at += 6
            if pgno == 0:
                return b"".join(out)
            if pflags & PAGE_FLAG_SIZE:
                (size,) = struct.unpack(">I", body[at:at + 4])
                if size > 2 * page_size + 64:
                    raise ReplicationError(f"{name}: a page of {size} compressed bytes")
                out.append(lz4.block.decompress(body[at + 4:at + 4 + size],
                                                uncompressed_size=page_size))
                at += 4 + size
            else:  # an older writer: each page its own LZ4 frame
                dec = lz4.frame.LZ4FrameDecompressor()
                out.append(dec.decompress(body[at:]))
                at = len(body) - len(dec.unused_data or b"")
    except (struct.error, RuntimeError, lz4.block.LZ4BlockError) as exc:
        raise ReplicationError(f"{name}: cannot be read ({exc})") from None


def _frame(body: bytes, name: str) -> bytes:
    import lz4.frame
    try:
        dec = lz4.frame.LZ4FrameDecompressor()
        return dec.decompress(body)
    except RuntimeError as exc:
        raise ReplicationError(f"{name}: cannot be read ({exc})") from None


def scan(paths: list[Path], needles: list[bytes]) -> tuple[int, int]:
    """Occurrences of any needle in the files (an LTX file's decompressed pages, any
    other file's raw bytes), and how many bytes that was."""
    found = scanned = 0
    for path in paths:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            continue
        text = pages(data, str(path)) if data[:4] == MAGIC else data
        found += sum(text.count(n) for n in needles if n)
        scanned += len(text)
    return found, scanned
