"""A power-cut file system: a directory whose unsynced writes a test can lose at will,
as a power cut loses what the page cache held.

`PowerCutDisk(backing, mount_point)` mounts `backing` at `mount_point` through FUSE
(`pyfuse3`), served by a process of its own, so that everything using the disk can be
SIGKILLed (`kill_users`) while the disk lives on. `cut(seed=...)` then drops the pending
state and unmounts; `mount()` mounts the same backing directory again, through a new
server and a new kernel mount, so no cache of the old one is left; `power_cut` does all
three.

The model (the strictest a POSIX program may assume):

- **Data.** Per file, the writes and truncates since its last `fsync`/`fdatasync` are held
  in the server's memory; reads see them. An fsync writes them to the backing file, in
  order. A cut drops them all, or, with a seed, keeps a random prefix of each file's list
  (the first one left out may keep a random prefix of its 4 KiB pages: a torn write).
  `mmap` works (SQLite's `-shm`): files are not opened `direct_io`, and the kernel writes
  mapped pages back through the same writes; its page cache is dropped at every open and
  at the remount, and its entries and attributes are never cached.
- **Names.** Creates (files, directories, symlinks, sockets), hard links, renames and
  removals reach the backing directory at once, but each is undone by a cut unless an
  fsync of a directory it touched (or of one touched by a later change) came after it.
  Names are journaled in order: a cut undoes the changes after the last durable one,
  newest first (with a seed, a random number more are kept), so the tree left is one the
  processes really saw. An fsync of a file does not make its name durable.
- **Everything else** (modes, owners, times) is durable at once.
- **Unmount** (`unmount`, or the owner's death) makes everything durable.

Mounting needs root (as CI runs): the server passes `allow_other`, since the runtime's
isolated apps run under uids of their own. The backing directory holds a hidden
`.power-cut-graves` while mounted: removed entries wait there until their removal is
durable.
"""

from ._control import CutReport
from ._disk import PowerCutDisk, PowerCutError
from ._users import kill_users, users

__all__ = ["CutReport", "PowerCutDisk", "PowerCutError", "kill_users", "users"]
