"""The agent's Markdown as a tree the page builds with DOM calls, never as HTML.

Raw HTML is not Markdown here: it stays text (`html` off). Each node is `[tag, children]`
with a tag from `TAGS`, or `["a", children, href]` for a link whose address is http(s) or
mailto (any other link is its text and its address, as text); a leaf is a string with its
control and invisible formatting characters written out (`visible`). The page shows a
link's address beside its label and opens it only on a click, in a new tab without an
opener.
"""

from __future__ import annotations

import functools
from typing import Any, Final

from markdown_it import MarkdownIt
from markdown_it.token import Token

from apps.chat import visible

TAGS: Final = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "pre", "hr",
     "strong", "em", "code", "s", "br", "a"}
)  # fmt: skip
SAFE_SCHEMES: Final = ("http://", "https://", "mailto:")
_PARSER: Final = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("strikethrough")
_BLOCK_OPEN: Final = {
    "paragraph_open": "p",
    "bullet_list_open": "ul",
    "ordered_list_open": "ol",
    "list_item_open": "li",
    "blockquote_open": "blockquote",
}
_INLINE_OPEN: Final = {"strong_open": "strong", "em_open": "em", "s_open": "s"}

Node = list[Any]


@functools.lru_cache(maxsize=1024)  # every change folds the conversation again
def markdown_tree(text: str) -> list[Node | str]:
    """The block nodes of `text` (shared between calls: read, never changed)."""
    root: Node = ["div", []]
    stack = [root]
    for token in _PARSER.parse(text):
        _block(token, stack)
    children: list[Node | str] = root[1]
    return children


def _block(token: Token, stack: list[Node]) -> None:
    parent = stack[-1][1]
    if token.type == "paragraph_open" and token.hidden:  # a tight list's item: no <p>
        stack.append(stack[-1])
    elif token.type in _BLOCK_OPEN or token.type == "heading_open":
        node: Node = [_BLOCK_OPEN.get(token.type, token.tag), []]
        parent.append(node)
        stack.append(node)
    elif token.type.endswith("_close"):
        if len(stack) > 1:
            stack.pop()
    elif token.type == "inline":
        parent.extend(_inline(token.children or []))
    elif token.type in ("fence", "code_block"):
        parent.append(["pre", [visible(token.content)]])
    elif token.type == "hr":
        parent.append(["hr", []])
    elif token.content:
        parent.append(visible(token.content))


def _inline(tokens: list[Token]) -> list[Node | str]:
    root: Node = ["span", []]
    stack = [root]
    for token in tokens:
        parent = stack[-1][1]
        if token.type in _INLINE_OPEN:
            node: Node = [_INLINE_OPEN[token.type], []]
            parent.append(node)
            stack.append(node)
        elif token.type == "link_open":
            href = str(token.attrs.get("href", ""))
            tag = "a" if href.lower().startswith(SAFE_SCHEMES) else "span"
            link: Node = [tag, [], href]  # the address, shown beside the label
            parent.append(link)
            stack.append(link)
        elif token.type.endswith("_close"):
            if len(stack) > 1:
                stack.pop()
        elif token.type == "code_inline":
            parent.append(["code", [visible(token.content)]])
        elif token.type == "softbreak":
            parent.append(" ")
        elif token.type == "hardbreak":
            parent.append(["br", []])
        elif token.type == "image":  # never loaded: its description and address as text
            source = str(token.attrs.get("src", ""))
            parent.append(visible(f"{token.content} ({source})"))
        else:
            parent.append(visible(token.content))
    return _addresses_shown(root[1])


def _addresses_shown(nodes: list[Node | str]) -> list[Node | str]:
    """Links keep their address as the last element; a link that is not safe becomes its
    label followed by its address in parentheses, as text."""
    shown: list[Node | str] = []
    for node in nodes:
        if isinstance(node, str):
            shown.append(node)
            continue
        node[1] = _addresses_shown(node[1])
        if node[0] == "span" and len(node) == 3:
            shown.extend([*node[1], visible(f" ({node[2]})")])
        elif node[0] == "a":
            shown.append(["a", node[1], visible(node[2])])
        else:
            shown.append(node)
    return shown
