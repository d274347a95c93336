"""The app's tools by method: each one's declaration (`@tool`) and its handler.

Shared by the manifest (`_declare`), which publishes the declarations, and the calls
(`_tools`), which run the handlers; it depends on neither.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from contracts import ToolDescriptor

if TYPE_CHECKING:
    from ._app_core import AppCore

TOOL_ATTR: Final = "__lineup_tool__"

BoundHandler = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class ToolDeclaration:
    """What `@tool` holds: the checked descriptor, the name of its handler method, and
    whether a call the app's restart cut short runs again (`runs_again`)."""

    descriptor: ToolDescriptor
    handler: str
    runs_again: bool = False


def declared_tools(app_class: type[Any]) -> dict[str, ToolDeclaration]:
    """The class's tools by method, in declaration order; a subclass may override one."""
    by_attribute: dict[str, ToolDeclaration] = {}
    for klass in reversed(app_class.__mro__):
        for attribute, value in vars(klass).items():
            declaration = getattr(value, TOOL_ATTR, None)
            if isinstance(declaration, ToolDeclaration):
                by_attribute[attribute] = declaration
            else:  # overridden without @tool: no longer a tool
                by_attribute.pop(attribute, None)
    tools: dict[str, ToolDeclaration] = {}
    for declaration in by_attribute.values():
        method = declaration.descriptor.method
        if method in tools:
            raise TypeError(f"tool {method!r} is declared by two handlers of {app_class.__name__}")
        tools[method] = declaration
    return tools


def tool_handlers(app: AppCore) -> dict[str, BoundHandler]:
    """The app's tool handlers by method: what the SDK calls for an `app.tool.invoke`."""
    return {
        method: getattr(app, declaration.handler)
        for method, declaration in declared_tools(type(app)).items()
    }
