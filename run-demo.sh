#!/usr/bin/env bash
# Set up .venv if needed, then show the main job on a temporary copy of bundled example
# notes: sync them, start the watch daemon, edit a note the way an editor saves, and ask
# the same question as of before and after the edit.
set -euo pipefail
cd "$(dirname "$0")"
VENV_EXTRAS=replication source scripts/setup-venv.sh  # not the test tools (moto, selenium)
memory=".venv/bin/memory"
tmp="$(mktemp -d)"
daemon_pid=""
cleanup() {
    if [ -n "$daemon_pid" ]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
export MEMORY_DB="$tmp/memory.db"

echo "== 1. The core: one fictional preference, asked at two cutoffs"
"$memory" demo
echo

echo "== 2. The main job: keep a notes folder indexed"
cp -R daemon/personal_memory/demo_notes "$tmp/notes"
"$memory" sync "$tmp/notes"
"$memory" watch "$tmp/notes" 2>"$tmp/watch.log" &
daemon_pid=$!
for _ in $(seq 1 100); do
    "$memory" status --json 2>/dev/null | grep -q '"daemon_running": true' && break
    sleep 0.1
done
echo "daemon running (pid $daemon_pid)"
question="When does the team meet?"
before="$(.venv/bin/python -c 'from personal_memory.times import format_time, now_micros; print(format_time(now_micros()))')"
sleep 0.2

echo "Editing projects/lighthouse.md the way editors save: write a temp file, rename it over."
note="$tmp/notes/projects/lighthouse.md"
sed 's/on Tuesdays at 10:00 in the blue room/on Thursdays at 14:00 in the garden room/' "$note" > "$tmp/notes/projects/.lighthouse.md.tmp"
mv "$tmp/notes/projects/.lighthouse.md.tmp" "$note"
# Wait, quietly, until the daemon has stored the edit and made its vector.
for _ in $(seq 1 100); do
    found="$("$memory" search "Thursdays" --json 2>"$tmp/poll.err" || true)"
    if grep -q Thursdays <<<"$found" && ! grep -q "no vector yet" "$tmp/poll.err"; then
        break
    fi
    sleep 0.1
done

echo
echo "Q: $question"
echo "-- as of $before (before the edit):"
"$memory" search "$question" --as-of "$before" --limit 1
echo "-- now:"
"$memory" search "$question" --limit 1
echo
echo "-- every revision of that section (the note's other sections were not touched):"
"$memory" history "notes/projects/lighthouse.md#Project Lighthouse#Meetings"
echo
echo "-- the whole note as it was known before the edit:"
"$memory" read "notes/projects/lighthouse.md" --as-of "$before"
echo
echo "-- only notes tagged 'work':"
"$memory" search "team" --tag work --limit 3
echo
echo "-- found by meaning: no word of the query is in the note"
"$memory" search departure time of the coastal rail --limit 1
echo
echo "-- nothing fits: no answer rather than a guess"
"$memory" search xyzzyplugh
echo
echo "-- what changed since before the edit:"
"$memory" changes --since "$before"
kill -TERM "$daemon_pid"
wait "$daemon_pid" && echo "daemon stopped cleanly (exit 0)"
daemon_pid=""
