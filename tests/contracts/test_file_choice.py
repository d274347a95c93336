"""A file the user chooses for an app: what the app may ask for (bounded by the runtime's
cap), and the type the runtime gives the file from its bytes, refusing one whose bytes
contradict what its name or the browser says, or that the app does not take."""

from __future__ import annotations

import pytest

from contracts import (
    FILE_OPEN_MAX_BYTES,
    Code,
    ContractError,
    FileWanted,
    accept_words,
    chosen_type,
    file_wanted,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
ZIP = b"PK\x03\x04" + b"\x00" * 16
WANTED = FileWanted(("image/*", "text/plain", ".md"), 1000)


def test_an_app_asks_for_types_and_a_size_within_the_cap() -> None:
    assert file_wanted(None) == FileWanted((), FILE_OPEN_MAX_BYTES)
    assert file_wanted({"accept": ["IMAGE/PNG", ".CSV", "image/png"], "max_bytes": 10}) == (
        FileWanted(("image/png", ".csv"), 10)
    )
    for bad, field in (
        ({"max_bytes": FILE_OPEN_MAX_BYTES + 1}, "max_bytes"),
        ({"max_bytes": 0}, "max_bytes"),
        ({"max_bytes": True}, "max_bytes"),
        ({"accept": ["<b>"]}, "accept"),
        ({"accept": ["image/png"] * 17}, "accept"),
        ({"accept": "image/png"}, "accept"),
        ({"path": "/home"}, "path"),
    ):
        with pytest.raises(ContractError) as refused:
            file_wanted(bad)
        assert refused.value.code == Code.INVALID_PAYLOAD and field in refused.value.detail


@pytest.mark.parametrize(
    ("name", "declared", "data", "media_type"),
    [
        ("board.png", "image/png", PNG, "image/png"),
        ("board", "", PNG, "image/png"),  # the bytes say it, the name need not
        ("board.dat", "application/octet-stream", PNG, "image/png"),
        ("notes.txt", "", b"milk\neggs\n", "text/plain"),
        ("notes.md", "text/markdown", "# Café\n".encode(), "text/markdown"),
        ("notes.md", "", "# Café\n".encode(), "text/markdown"),  # its extension says it
        ("notes", "", b"plain", "text/plain"),
    ],
)
def test_the_type_is_told_from_the_bytes(
    name: str, declared: str, data: bytes, media_type: str
) -> None:
    assert chosen_type(WANTED, name, declared, data) == media_type


@pytest.mark.parametrize(
    ("name", "declared", "data", "code", "sentence"),
    [
        (
            "fake.png",
            "image/png",
            b"<script>alert(1)</script>",
            Code.UNSUPPORTED_MEDIA_TYPE,
            "“fake.png” is not a PNG picture, as its name says: choose another file.",
        ),
        (
            "notes.txt",
            "text/plain",
            PNG,
            Code.UNSUPPORTED_MEDIA_TYPE,
            "“notes.txt” says it is plain text but its bytes are a PNG picture:"
            " choose another file.",
        ),
        (
            "archive.zip",
            "",
            ZIP,
            Code.UNSUPPORTED_MEDIA_TYPE,
            "“archive.zip” is a ZIP archive; this app takes pictures, plain text or .md files:"
            " choose another file.",
        ),
        (
            "big.txt",
            "",
            b"x" * 1001,
            Code.TOO_LARGE,
            "“big.txt” is 1001 bytes; this app takes files up to 1000 bytes: choose a smaller one.",
        ),
    ],
)
def test_a_file_the_app_does_not_take_is_refused_in_a_sentence(
    name: str, declared: str, data: bytes, code: Code, sentence: str
) -> None:
    with pytest.raises(ContractError) as refused:
        chosen_type(WANTED, name, declared, data)
    assert (refused.value.code, refused.value.detail) == (code, sentence)


def test_a_document_made_of_a_zip_keeps_its_type() -> None:
    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    anything = FileWanted((), 1000)
    assert chosen_type(anything, "report.docx", docx, ZIP) == docx
    assert chosen_type(anything, "data.bin", "", b"\x00\x01\x02") == "application/octet-stream"
    assert accept_words(("image/png", "image/jpeg", ".csv")) == (
        "PNG pictures, JPEG pictures or .csv files"
    )
