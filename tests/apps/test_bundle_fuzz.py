"""Any single corrupted byte of a signed bundle gets a definite answer.

What is true, and asserted: the verifier raises nothing but `BundleError`, and when it
accepts a corrupted file, what it accepted is byte for byte the signed content. Some flips
are accepted, because the signature covers the *content*, not the zip around it, and zip
has bytes that do not determine content: the local headers' copies of fields zipfile reads
from the central directory (method, times, CRC, sizes), central-directory fields no check
reads (times, "version made by", permission bits), and deflate's own slack (the final-block
bit of a one-block stream, padding bits, a back-reference moved to an equal earlier run).
Every flip that changes content is caught: by zipfile (CRC, deflate, headers) or, failing
that, by the SHA-256 of the signed file list.
"""

from __future__ import annotations

from collections import Counter

from hypothesis import event, given, settings
from hypothesis import strategies as st

from actors.app_manager._bundle import (
    BundleError,
    read_bundle,
    sha256_hex,
    verify_bundle_data,
    write_bundle,
)
from contracts import Code
from tests.apps.conftest import Signed


def _verdict(signed: Signed, offset: int, mask: int) -> str:
    """The code a bundle with byte `offset` XORed with `mask` gets, or "accepted" after
    checking that what was accepted is exactly the signed content."""
    original = signed.data()
    corrupted = bytearray(original)
    corrupted[offset] ^= mask
    try:
        verified, contents = verify_bundle_data(bytes(corrupted), signed.trusted)
    except BundleError as error:
        assert isinstance(error.code, Code)
        return error.code.value
    assert contents == read_bundle(original), (offset, mask)
    assert verified.digest == sha256_hex(bytes(corrupted)) != sha256_hex(original)
    return "accepted"


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_a_flipped_byte_is_refused_with_a_code_or_changes_nothing_signed(
    signed: Signed, data: st.DataObject
) -> None:
    offset = data.draw(st.integers(0, len(signed.data()) - 1), label="offset")
    mask = data.draw(st.integers(1, 255), label="mask")
    event(_verdict(signed, offset, mask))


def test_every_byte_inverted(signed: Signed) -> None:
    # The same property, exhaustively for one pattern: every byte of the file inverted.
    verdicts = Counter(_verdict(signed, offset, 0xFF) for offset in range(len(signed.data())))
    # Mostly refused; and the data cannot all be slack: most flips there break the content.
    assert verdicts["bundle_malformed"] > verdicts["accepted"] > 0


# Flips in the *content* of an entry, the zip rewritten around it so that its CRCs are right:
# what an attacker who knows zip would do. Here nothing is slack: every flip is refused.
CONTENT_CODES = {
    "bundle_hash_mismatch",  # an app file or the manifest
    "bundle_malformed",  # the signature record no longer parses
    "bundle_untrusted_key",  # its key id names another key
    "bundle_bad_signature",  # its signature or signed data changed
}


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_a_flipped_byte_in_any_entry_is_refused(signed: Signed, data: st.DataObject) -> None:
    contents = read_bundle(signed.data())
    assert contents.signature is not None
    entries = {
        "manifest.json": contents.manifest,
        "signature.json": contents.signature,
        **contents.files,
    }
    name = data.draw(st.sampled_from(sorted(entries)), label="entry")
    offset = data.draw(st.integers(0, len(entries[name]) - 1), label="offset")
    flipped = bytearray(entries[name])
    flipped[offset] ^= data.draw(st.integers(1, 255), label="mask")
    entries[name] = bytes(flipped)
    bundle = signed.path.with_name("content-flip.bundle")
    write_bundle(
        bundle,
        manifest=entries.pop("manifest.json"),
        signature=entries.pop("signature.json"),
        files=entries,
    )
    try:
        verify_bundle_data(bundle.read_bytes(), signed.trusted)
    except BundleError as error:
        event(error.code.value)
        assert error.code.value in CONTENT_CODES, error
    else:
        raise AssertionError(f"accepted with {name} changed at {offset}")
