"""``memory demo``: two versions of one fictional preference, asked at two cutoffs."""

from __future__ import annotations

from ..memory import MemoryStore

NAMESPACE = "demo"


def run_demo(store: MemoryStore) -> dict:
    # Oldest first: known_at never steps back.
    store.remember("career-preference", "Avery prefers equity research over trading.",
                   namespace=NAMESPACE, title="Career preference", source="demo",
                   known_at="2025-01-10T09:00:00Z", valid_from="2025-01-10T09:00:00Z")
    store.remember("team-lunch", "The research team has lunch on Thursdays.",
                   namespace=NAMESPACE, title="Team lunch", source="demo",
                   known_at="2025-01-12T09:00:00Z", valid_from="2025-01-12T09:00:00Z")
    store.remember("career-preference", "Avery now prefers quantitative trading.",
                   namespace=NAMESPACE, title="Career preference", source="demo",
                   known_at="2025-03-15T09:00:00Z", valid_from="2025-03-15T09:00:00Z")
    question = "What does Avery prefer?"
    answers = []
    lines = [f"Question: {question!r} (namespace {NAMESPACE!r})"]
    for cutoff in ("2025-02-01", "2025-04-01"):
        top = store.search(question, namespace=NAMESPACE, as_of=cutoff, limit=1)
        answer = top[0].to_dict() if top else None
        answers.append({"as_of": cutoff, "result": answer})
        lines.append(f"  as of {cutoff}: {answer['content'] if answer else '(nothing known)'}")
    return {"question": question, "answers": answers, "text": "\n".join(lines)}
