"""Whether git could commit a file: a secret key written inside a work tree that does not
ignore it is one `git add .` away from being published with the code."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def _git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str] | None:
    git = shutil.which("git")
    if git is None:
        return None
    try:
        return subprocess.run(
            [git, "-C", str(cwd), *args], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def unignored_secret(path: Path) -> str | None:
    """A sentence for the person when `path` lies in a git work tree that does not ignore it
    (saying what to add to its .gitignore); None when it is ignored, outside any work tree,
    or git is not there to ask."""
    path = path.resolve()
    top = _git("rev-parse", "--show-toplevel", cwd=path.parent)
    if top is None or top.returncode != 0 or not top.stdout.strip():
        return None
    ignored = _git("check-ignore", "-q", path.name, cwd=path.parent)
    if ignored is None or ignored.returncode != 1:  # 0: ignored; 128: git could not tell
        return None
    root = Path(top.stdout.strip()).resolve()
    try:
        folder = path.parent.relative_to(root).as_posix()
    except ValueError:  # git names the tree by another path than ours: the name will do
        folder = "."
    entry = f"/{folder}/" if folder != "." else f"/{path.name}"
    return (
        f"{path} is in the git work tree {root}, which does not ignore it: add {entry} to"
        f" {root / '.gitignore'} so the secret key is never committed"
    )
