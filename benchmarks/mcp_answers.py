"""What an assistant receives over MCP, in bytes, and whether the answer is in it.

    .venv/bin/python benchmarks/mcp_answers.py --vault PATH/obsidian-help/en \
        [--source OTHER/daemon] [--out benchmarks/results/mcp_answers.json]

Imports the folder (the English part of the Obsidian help vault: a clone of
github.com/obsidianmd/obsidian-help) twice, a month apart with ten notes edited, with the
semantic model; then a real stdio MCP client asks the questions of
benchmarks/data/vault_questions.json with memory_search (limit 5, then the default limit)
and measures the size of each answer's text content, whether a right note is in the top 3,
and whether the text holds the question's answer key (its words that answer it): a
question whose key is missing needs a second call (a read). It also reads the
largest note, asks what changed between the two imports (limit 10) and lists the tools,
resources and prompts. ``--source`` runs another version of the package (its daemon/
folder) the same way, for a before-and-after in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "daemon"


def memory(source: Path, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(source), "MEMORY_EMBEDDER": "e5"}
    subprocess.run([sys.executable, "-m", "personal_memory", *args], check=True, env=env,
                   stdout=subprocess.DEVNULL)


def size(result) -> int:
    return sum(len(c.text.encode()) for c in result.content if hasattr(c, "text"))


def raw(result) -> int:
    """The result as the SDK puts it on the wire: text content and structured content."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if hasattr(c, "text"))


def answered(result, item: dict) -> bool:
    """Whether every word of the question's answer key is in the text the search returned
    (what an assistant reads): if so, it can answer without a second call. The marks
    around the query's words (``**``) are read as the emphasis they are, not as text: "Add
    **formula**" holds "Add formula" (and a key written with the note's bold, "Restore**",
    is its words)."""
    text = text_of(result).replace("**", "").lower()
    return all(word.replace("**", "").lower() in text for word in item["answer"])


def notes_of(structured: dict) -> list[str]:
    out = []
    for r in structured.get("results", []):
        note = r.get("note") if "note" in r else r.get("revision", {}).get("note")
        out.append(note)
    return out


async def ask(source: Path, db: Path, questions: list[dict], big: str, since: str,
              until: str) -> dict:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "personal_memory", "--db", str(db), "serve"],
        env={**os.environ, "PYTHONPATH": str(source), "MEMORY_EMBEDDER": "e5"})
    async with Client(params, mode="legacy") as c:
        listed = await c.list_tools()
        tools = listed.tools
        out: dict = {"tools_list_bytes": sum(len(json.dumps(t.model_dump(mode="json")))
                                             for t in tools),
                     "tools_list_raw_bytes": raw(listed)}
        sizes, raws, top3, default_raw, default_top3 = [], [], 0, [], 0
        second_call, second_call_default = [], []
        for item in questions:
            r = await c.call_tool("memory_search", {"query": item["q"], "limit": 5})
            sizes.append(size(r))
            raws.append(raw(r))
            top3 += any(n in item["notes"] for n in notes_of(r.structured_content)[:3])
            if not answered(r, item):
                second_call.append(item["q"])
            r = await c.call_tool("memory_search", {"query": item["q"]})
            default_raw.append(raw(r))
            if not answered(r, item):
                second_call_default.append(item["q"])
            default_top3 += any(n in item["notes"]
                                for n in notes_of(r.structured_content)[:3])
        out["search_limit_5_bytes"] = {"median": statistics.median(sizes), "max": max(sizes),
                                       "min": min(sizes)}
        out["search_limit_5_raw_bytes"] = {"median": statistics.median(raws),
                                           "max": max(raws), "min": min(raws)}
        out["search_default_limit_raw_bytes"] = {"median": statistics.median(default_raw),
                                                 "max": max(default_raw),
                                                 "min": min(default_raw)}
        out["answer_in_top_3"] = f"{top3} of {len(questions)}"
        out["answer_in_top_3_default_limit"] = f"{default_top3} of {len(questions)}"
        # questions whose answer key is not in the first search's text: a second call
        out["needs_a_second_call"] = {"limit_5": len(second_call),
                                      "default_limit": len(second_call_default),
                                      "questions": second_call_default}
        read = await c.call_tool("memory_read", {"note": big})
        out["read_largest_note_bytes"] = size(read)
        out["read_largest_note_raw_bytes"] = raw(read)
        changes = await c.call_tool("memory_changes", {"since": since, "until": until,
                                                       "limit": 10})
        out["changes_10_notes_bytes"] = size(changes)
        out["changes_10_notes_raw_bytes"] = raw(changes)
        for name, call in (("resources", c.list_resources), ("prompts", c.list_prompts)):
            try:
                listed = await call()
                out[f"{name}_listed"] = len(getattr(listed, name))
            except Exception:
                out[f"{name}_listed"] = 0
    return out


def run(vault: Path, source: Path, questions: list[dict]) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "en"
        shutil.copytree(vault, root)
        db = Path(tmp) / "m.db"
        memory(source, "--db", str(db), "sync", str(root), "--known-at", "2025-01-01")
        edited = sorted(root.rglob("*.md"))[:10]
        for path in edited:
            path.write_text(path.read_text() + "\nA line added in February.\n")
        memory(source, "--db", str(db), "sync", str(root), "--known-at", "2025-02-01")
        largest = max(root.rglob("*.md"), key=lambda p: p.stat().st_size)
        big = "en/" + str(largest.relative_to(root))
        result = asyncio.run(ask(source, db, questions, big, "2025-01-15", "2025-02-02"))
        result["largest_note"] = {"note": big, "bytes": largest.stat().st_size}
        return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vault", required=True, type=Path,
                    help="the en/ folder of a clone of obsidianmd/obsidian-help")
    ap.add_argument("--source", type=Path, help="another version's daemon/ folder to compare")
    ap.add_argument("--out", default=str(HERE / "results" / "mcp_answers.json"))
    args = ap.parse_args()
    questions = json.loads((HERE / "data" / "vault_questions.json").read_text())["questions"]
    result = {"questions": len(questions), "this_version": run(args.vault, SOURCE, questions)}
    if args.source:
        result["other_version"] = run(args.vault, args.source.resolve(), questions)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
