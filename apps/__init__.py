"""The apps that run on the runtime, each its own process, and the SDK they use.

- `sdk`: the Runtime SDK, the only door between an app and the runtime;
- `chat`, `app_registry`, `settings`: the core apps (`actors.runtime_children.CORE_APPS`),
  the user's conversation, the registry and the settings;
- `whiteboard`, `draw_and_guess`, `pomodoro`, `voice`: sample installed apps, each built,
  signed and installed like any third-party app (`lineup app build | sign | install`; no
  core-app shortcut), each using only the Runtime SDK and its surface's bridge;
- `testing`: helpers for an app author's tests against a real runtime.

The sample apps (each package's docstring says its tools and what it keeps):

- `whiteboard`: `board.create`, `board.summary`, `board.export` (PNG and SVG artifacts,
  the first also as the `artifact` the chat shows), `board.save` (a file through
  `file.save`); the board is the instance's session data; its surface is the board the
  user draws on;
- `draw-and-guess`: `game.start_round` (a deadline operation: the round's time limit); the
  round in session data, the secret word in its private directory until the round ends;
- `pomodoro`: `pomodoro.start` (a deadline operation), `pomodoro.status`, `pomodoro.stop`;
  what the timer shows, in session data; its surface the countdown with Pause, Resume and
  Interrupt;
- `voice`: `voice.request_recording` (the user records through `audio.record`); what its
  surface shows, in session data; Record, Stop and Replay.

One timer and one round at a time: a second `pomodoro.start` or `game.start_round` while
one is open in the conversation is refused at once, `already_running`, and the open one
goes on, its end unchanged. Refusing rather than replacing keeps what the user is doing
from being ended by a call they did not make; the runtime decides it as it takes the
handover (`alone`), so two starts at once leave exactly one running. The whiteboard's
tools take calls at once: two `board.create` write the board against its revision and both
answer the same instance, two exports both render, two saves each ask the user and each
saves its own file (`tests/installed/test_twice.py`). Their end-to-end tests
(`tests/installed/`) take each from its signed bundle through enable, the agent's call,
the surface's user action in Chromium, the one final result, the focus coming back,
disable and removal. The demo agent (`peers/agent`) uses them when the conversation's
inventory offers them. A new app starts from `lineup app new NAME`; `docs/apps.md` is the
author's guide."""
