"""An app's log ending tool calls until it is killed: `python tool_call_writer.py DIR
CALLS`. Each call is recorded as running (a synced write, before its handler would run)
and then finished with its result (a write the log does not sync); with CALLS = 2, the
second call's record follows the first call's end. It prints `done` and holds its files
open until the cut kills it (a minute at most: a test that fails before its cut leaves no
writer behind for long). The test waits for `done`, never for this."""

import sys
import time

from apps.sdk._log import EventLog

app_dir, calls = sys.argv[1], int(sys.argv[2])
log = EventLog(app_dir)
for n in range(calls):
    call_id = f"call-{n}"
    log.add_tool_call(f"invoke-{n}", {"call_id": call_id, "method": "echo", "arguments": {}})
    if n == 0:
        log.finish_tool_call(call_id, '{"kind": "result", "output": {}}')
print("done", flush=True)
time.sleep(60)
