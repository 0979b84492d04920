"""Between the client and the SDK on standard input: every line is checked before the SDK
reads it, so that what the SDK would drop without a word still gets an answer."""

from __future__ import annotations

import json
import os
import re
import threading

INVALID_UNICODE = "invalid request: a string in it is not valid Unicode (a lone surrogate)"


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def guard_line(line: bytes) -> bytes:
    """One line of the protocol as the SDK should see it. JSON may escape lone surrogates
    (``\\ud800``), which the SDK's parser rejects without answering: such a request becomes
    a call of an unknown method, which the SDK answers with an error under the same id, and
    such a notification is dropped. Every other line passes unchanged."""
    if not _SURROGATE_ESCAPE.search(line):
        return line
    try:
        message = json.loads(line)
    except ValueError:
        return line  # not JSON: the SDK reports that itself
    try:
        json.dumps(message, ensure_ascii=False).encode("utf-8")
        return line  # only valid pairs (an emoji, say)
    except UnicodeEncodeError:
        pass
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return b""
    return (json.dumps({"jsonrpc": "2.0", "id": message["id"], "method": INVALID_UNICODE,
                        "params": {}}) + "\n").encode("utf-8")


def guard_stdin() -> None:
    """Put :func:`guard_line` between the client and the SDK: fd 0 becomes a pipe fed
    by a thread that reads the real standard input line by line."""
    source = os.dup(0)
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)

    def pump() -> None:
        with os.fdopen(source, "rb") as src, os.fdopen(write_end, "wb") as dst:
            for line in src:
                out = guard_line(line)
                if out:
                    dst.write(out)
                    dst.flush()
    threading.Thread(target=pump, name="stdin-guard", daemon=True).start()
