"""Runs a command on a real pseudo-terminal, as a user at a terminal would.

Usage: pty-run.py SPEC, SPEC being JSON: {"argv": [...], "steps": [{"wait": REGEX, "send": TEXT}],
"timeout": SECONDS}. The command becomes the session leader of a new pty and its foreground
process group, so a "\u0003" sent is the terminal's Ctrl-C: the kernel signals the whole
foreground group. Each step waits until the output so far matches REGEX, then types TEXT.
Prints JSON: {"status": exit code (128 + signal when killed), "output": all output, "timeout": bool}.
"""

import json
import os
import pty
import re
import select
import signal
import sys
import time

spec = json.loads(sys.argv[1])
deadline = time.monotonic() + spec.get("timeout", 30)
pid, fd = pty.fork()
if pid == 0:
    os.execvp(spec["argv"][0], spec["argv"])

output = b""
timed_out = False


def read_some(wait):
    """Reads what the terminal has within `wait` seconds; False at end of output."""
    global output
    ready, _, _ = select.select([fd], [], [], wait)
    if not ready:
        return True
    try:
        chunk = os.read(fd, 65536)
    except OSError:  # EIO: every process holding the terminal has exited
        return False
    output += chunk
    return len(chunk) > 0


open_ = True
for step in spec.get("steps", []):
    pattern = re.compile(step["wait"].encode())
    while open_ and not pattern.search(output) and time.monotonic() < deadline:
        open_ = read_some(0.05)
    if not pattern.search(output):
        timed_out = True
        break
    output += b"\n[pty-run: typed " + step["send"].encode("unicode_escape") + b"]\n"
    os.write(fd, step["send"].encode())
while open_ and time.monotonic() < deadline:
    open_ = read_some(0.05)
if open_:
    timed_out = True
    os.killpg(pid, signal.SIGKILL)
_, wait_status = os.waitpid(pid, 0)
status = os.waitstatus_to_exitcode(wait_status)
print(json.dumps({
    "status": status if status >= 0 else 128 - status,
    "output": output.decode(errors="replace"),
    "timeout": timed_out,
}))
