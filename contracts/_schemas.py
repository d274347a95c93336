"""The exported JSON Schemas (draft 2020-12) of every contract, and the committed copies.

The schemas are generated from the models, never written by hand, and committed under
`contracts/schemas/` so that a peer in any language can use them and so that a test
notices when a model change alters the public contract. Regenerate them with
`lineup protocol schemas contracts/schemas`.

The schemas say what the models say, minus what JSON Schema cannot: the limits on encoded
size and nesting depth, and the cross-field rules (scope coherence, sender kinds, manifest
coherence), which `docs/protocol.md` lists and the validators enforce.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, TypeAdapter

from contracts._catalog import MESSAGE_TYPES
from contracts._codes import CapabilityResult, Code
from contracts._envelope import RuntimeEnvelope
from contracts._legacy import LEGACY_PAYLOADS, LegacyMessage
from contracts._manifest import AppManifest
from contracts._tools import JSON_SCHEMA_DIALECT, ToolDescriptor
from contracts._wire import FRAME_ADAPTER, FRAME_MODELS

SCHEMA_SUFFIX: Final = ".json"


def _model_schema(source: type[BaseModel] | TypeAdapter[Any]) -> dict[str, Any]:
    if isinstance(source, TypeAdapter):
        return source.json_schema(mode="validation", by_alias=True)
    return source.model_json_schema(mode="validation", by_alias=True)


def _finish(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": f"urn:lineup:schema:{name}", **schema}


def export_schemas() -> dict[str, dict[str, Any]]:
    """Every public schema by name (the file name without `.json`), in a stable order."""
    sources: dict[str, type[BaseModel] | TypeAdapter[Any]] = {
        "runtime-envelope.v1": RuntimeEnvelope,
        "app-manifest.v1": AppManifest,
        "tool-descriptor.v1": ToolDescriptor,
        "legacy-message.v1": LegacyMessage,
        "wire.frame.v1": FRAME_ADAPTER,
    }
    for spec in MESSAGE_TYPES.values():
        sources[f"payload.{spec.type}"] = spec.payload
    for legacy_type, model in LEGACY_PAYLOADS.items():
        sources[f"legacy-payload.{legacy_type}"] = model
    for tag, frame_model in FRAME_MODELS.items():
        sources[f"wire.{tag}.v1"] = frame_model
    schemas = {name: _finish(name, _model_schema(source)) for name, source in sources.items()}
    schemas["codes.v1"] = _finish(
        "codes.v1",
        {
            "title": "Code",
            "description": "Every rejection and failure code; see docs/protocol.md.",
            "type": "string",
            "enum": [code.value for code in Code],
        },
    )
    schemas["capability-result.v1"] = _finish(
        "capability-result.v1",
        {
            "title": "CapabilityResult",
            "type": "string",
            "enum": [r.value for r in CapabilityResult],
        },
    )
    return dict(sorted(schemas.items()))


def render_schema(schema: dict[str, Any]) -> str:
    """The committed text of a schema: sorted keys, two-space indent, final newline."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(directory: str | Path) -> list[Path]:
    """Writes every schema into `directory` (created if needed); returns the files written."""
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name, schema in export_schemas().items():
        path = target / f"{name}{SCHEMA_SUFFIX}"
        path.write_text(render_schema(schema), encoding="utf-8")
        written.append(path)
    return written


def diff_schemas(directory: str | Path) -> list[str]:
    """What differs between the generated schemas and the files in `directory`:
    one line per missing, changed or unexpected file; empty when they agree."""
    target = Path(directory)
    generated = {f"{name}{SCHEMA_SUFFIX}": render_schema(s) for name, s in export_schemas().items()}
    present = {path.name for path in target.glob(f"*{SCHEMA_SUFFIX}")} if target.is_dir() else set()
    problems = []
    for file_name, text in generated.items():
        if file_name not in present:
            problems.append(f"missing: {file_name}")
        elif (target / file_name).read_text(encoding="utf-8") != text:
            problems.append(f"changed: {file_name}")
    problems.extend(f"unexpected: {name}" for name in sorted(present - set(generated)))
    return problems


def schemas_dir() -> Path:
    """The committed schemas shipped inside the package."""
    return Path(str(resources.files("contracts") / "schemas"))


def fixtures_dir() -> Path:
    """The golden fixtures shipped inside the package."""
    return Path(str(resources.files("contracts") / "fixtures"))
