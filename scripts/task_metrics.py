"""Per-task call metrics for scripts/bench-tasks.sh, from what a run left.

    python3 task_metrics.py TRACE ANSWER STATE_DIR

TRACE is acp-coder's --trace file (every protocol frame), ANSWER the answer
it printed, STATE_DIR its XDG_STATE_HOME (the agent log is under it).
Prints one JSON object:
  calls       tool calls the agent ran (each parsed call is one `tool_call`)
  unparsed    replies that attempted a call that did not parse: the agent's
              "does not parse; sent back" log lines, plus 1 when the final
              answer itself is a call (what a build without the send-back
              showed the user as the answer)
  edits       edit calls (`kind: edit`: edit_file, write_file)
  applied     edit calls that completed
"""

import json
import pathlib
import re
import sys

CALL_IN_TEXT = re.compile(r'"(name|function|tool)"\s*:\s*"[A-Za-z_][\w.-]*"\s*,\s*"(arguments|parameters|args)"\s*:')


def main(trace, answer, state):
    calls = edits = applied = unparsed = 0
    kinds, status = {}, {}
    path = pathlib.Path(trace)
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            try:
                frame = json.loads(line)
            except ValueError:
                continue
            msg = frame.get("msg")
            if frame.get("dir") != "out" or not isinstance(msg, dict):
                continue
            if msg.get("method") != "session/update":
                continue
            update = msg.get("params", {}).get("update", {})
            kind = update.get("sessionUpdate")
            tid = update.get("toolCallId")
            if kind == "tool_call" and tid not in kinds:
                calls += 1
                kinds[tid] = update.get("kind")
            if kind in ("tool_call", "tool_call_update") and update.get("status"):
                status[tid] = update["status"]
    for tid, kind in kinds.items():
        if kind == "edit":
            edits += 1
            applied += status.get(tid) == "completed"
    for log in pathlib.Path(state).rglob("*.log*") if pathlib.Path(state).exists() else []:
        unparsed += log.read_text(errors="replace").count("does not parse; sent back")
    ans = pathlib.Path(answer)
    if ans.exists() and CALL_IN_TEXT.search(ans.read_text(errors="replace")):
        unparsed += 1
    print(json.dumps({"calls": calls, "unparsed": unparsed, "edits": edits, "applied": applied}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
