"""The artifact quotas as a configuration: an artifact travels in one message of its app, so
its largest body must pass the supervisor's limits on an app's messages, and a limit that
would not is refused when the configuration is read, naming the field."""

from __future__ import annotations

import msgpack
import pytest
from pydantic import ValidationError

from actors.kernel import ArtifactLimits, RuntimeConfig


def test_the_largest_create_fits_an_apps_message() -> None:
    app_limits = RuntimeConfig().app_limits
    for limits in (ArtifactLimits(), ArtifactLimits(max_bytes=240 * 1024, max_title=1000)):
        body = {
            "data": b"\xff" * limits.max_bytes,
            "media_type": "application/" + "x" * 147,  # the door's 160 characters
            "title": "\U0001f600" * limits.max_title,  # four bytes each
            "conversation_id": "c" * 256,
        }
        assert len(msgpack.packb(body)) <= app_limits.max_body


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_bytes", 240 * 1024 + 1), ("max_title", 1001), ("max_count", 0), ("media_types", ())],
)
def test_a_limit_out_of_bounds_is_refused_naming_it(field: str, value: object) -> None:
    with pytest.raises(ValidationError) as refused:
        ArtifactLimits.model_validate({field: value})
    assert refused.value.errors()[0]["loc"] == (field,)
