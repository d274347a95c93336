"""An app directory made into a signed bundle, with a key made for the test alone."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._cli import lineup_ok


@dataclass(frozen=True)
class SignedBundle:
    """A bundle `lineup app build` made and `lineup app sign` signed; the runtime accepts
    it once `public_key` is in its trusted keys."""

    path: Path
    public_key: Path
    app_scope: str
    tools: tuple[str, ...]


async def signed_bundle(app_dir: Path, out: Path) -> SignedBundle:
    """Builds the app in `app_dir` into `out`/app.bundle and signs it with a fresh key
    written to `out`/keys (no key of the author's is needed, nor touched)."""
    out.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 (once, before any process)
    keys = await lineup_ok("app", "keygen", "--out", out / "keys", "--name", "throwaway")
    bundle = out / "app.bundle"
    built = await lineup_ok("app", "build", app_dir, "--out", bundle)
    await lineup_ok("app", "sign", bundle, "--key", keys["key"])
    return SignedBundle(bundle, Path(keys["public"]), built["app_scope"], tuple(built["tools"]))
