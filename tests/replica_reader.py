"""A reader of a replica, as a process of its own (Litestream's VFS reads its settings
at start, and no other SQLite file can be opened once it is loaded): one JSON request a
line on stdin, one JSON answer a line on stdout."""

import json
import sys

from personal_memory.memory import MemoryStore


def main() -> None:
    store = MemoryStore.open_replica(sys.argv[1], embedder="none")
    for line in sys.stdin:
        ask = json.loads(line)
        try:
            if ask["op"] in ("search", "reference"):  # the fast path, or the reference one
                search = store.search if ask["op"] == "search" else store.search_reference
                found = search(ask["query"], namespace=ask["namespace"],
                               as_of=ask.get("as_of"), limit=ask.get("limit", 10))
                answer = {"results": [r.to_dict() for r in found],
                          "known_up_to": found.known_up_to, "no_answer": found.no_answer}
            elif ask["op"] == "history":
                answer = {"history": [r.to_dict() for r in store.history(
                    ask["memory_id"], namespace=ask["namespace"], as_of=ask.get("as_of"))]}
            else:
                answer = {"known_up_to": store.known_up_to()}
        except Exception as exc:  # the test shows it; the reader goes on
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
