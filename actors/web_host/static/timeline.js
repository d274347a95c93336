// The conversation's items, in timeline order, laid out in blocks of BLOCK items: the list
// (#timeline, role="list") holds blocks (<ol role="none">, invisible to assistive
// technology), each block its items (<li role="listitem">: the list's items, as a screen
// reader counts them). A block out of view is skipped by layout (`content-visibility:
// auto`, style.css), so what would cost the page a layout of the whole conversation (the
// chat docked beside an app in front, the window resized) costs the blocks in view, and an
// item added costs its own block. app.js places items through here.
"use strict";

window.lineupTimeline = (() => {
  const BLOCK = 50;
  const list = () => document.getElementById("timeline");

  function newBlock() {
    const block = document.createElement("ol");
    block.className = "timeline-block";
    block.setAttribute("role", "none");
    list().append(block);
    return block;
  }

  // The last item, or null (a block is empty once the only item in it went).
  function last() {
    for (let block = list().lastElementChild; block; block = block.previousElementSibling) {
      if (block.lastElementChild) return block.lastElementChild;
    }
    return null;
  }

  // `node` in its place by its order; one with the `data-id` of an item shown replaces it.
  function place(node, order) {
    node.setAttribute("role", "listitem");
    const id = node.dataset.id;
    const shown = id && list().querySelector(`:scope > ol > li[data-id="${CSS.escape(id)}"]`);
    if (shown) shown.replaceWith(node);
    else insert(node, order);
  }

  // Most items are new at the end: one look at the last item, not a walk through them all.
  // An item whose order equals another's goes after it; one no order places, at the end.
  function insert(node, order) {
    const end = last();
    if (end && !(Number(end.dataset.order) <= order)) {
      for (const block of list().children) {
        const blockEnd = block.lastElementChild;
        if (!blockEnd || Number(blockEnd.dataset.order) <= order) continue;
        const after = [...block.children].find((child) => Number(child.dataset.order) > order);
        if (after) {
          block.insertBefore(node, after);
          return;
        }
      }
    }
    const block = list().lastElementChild;
    (block && block.childElementCount < BLOCK ? block : newBlock()).append(node);
  }

  // Every item goes but the one whose id is `kept`; no block is left empty.
  function clear(kept) {
    for (const block of [...list().children]) {
      for (const child of [...block.children]) if (child.id !== kept) child.remove();
      if (!block.childElementCount) block.remove();
    }
  }

  return { last, place, clear };
})();
