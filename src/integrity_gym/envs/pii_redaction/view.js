// The pii_redaction observation in the playground and the run viewer (``EnvExtras.view``): served at
// static/views/pii_redaction.js and loaded by render.js's ``loadView``. Text is set as text, never parsed as HTML.

import { el } from "../render.js";

/** Offset of (node, offset) within container's text. */
function textOffset(container, node, offset) {
  const range = document.createRange();
  range.selectNodeContents(container);
  range.setEnd(node, offset);
  return range.toString().length;
}

/** The text node of ``container`` holding its character ``k`` (or the end), and k's offset in that node. */
function nodeAt(container, k) {
  const walk = document.createTreeWalker(container, NodeFilter.SHOW_TEXT);
  let node;
  let last = null;
  let seen = 0;
  while ((node = walk.nextNode())) {
    if (k < seen + node.length) return [node, k - seen];
    seen += node.length;
    last = node;
  }
  return last ? [last, last.length] : [container, 0];
}

/** Where the selection's moving end goes for ``key``: a character, a word (``byWord``), a line, its ends. */
function movedFocus(text, focus, key, byWord) {
  const lineStart = (k) => text.lastIndexOf("\n", k - 1) + 1;
  const lineEnd = (k) => { const n = text.indexOf("\n", k); return n < 0 ? text.length : n; };
  let k = focus;
  if (key === "ArrowRight" && byWord) {
    while (k < text.length && /\s/.test(text[k])) k += 1;
    while (k < text.length && !/\s/.test(text[k])) k += 1;
  } else if (key === "ArrowLeft" && byWord) {
    while (k > 0 && /\s/.test(text[k - 1])) k -= 1;
    while (k > 0 && !/\s/.test(text[k - 1])) k -= 1;
  } else if (key === "ArrowRight") k = Math.min(text.length, k + 1);
  else if (key === "ArrowLeft") k = Math.max(0, k - 1);
  else if (key === "Home") k = lineStart(k);
  else if (key === "End") k = lineEnd(k);
  else if (key === "ArrowDown" || key === "ArrowUp") {
    const column = k - lineStart(k);
    const target = key === "ArrowDown" ? lineEnd(k) + 1 : lineStart(k) - 1;
    if (target < 0) return 0;
    if (target > text.length) return text.length;
    const start = lineStart(target);
    k = Math.min(start + column, lineEnd(start));
  }
  return k;
}

/**
 * Select in a window that is not editable (the browser moves no caret there) from the keyboard:
 * Shift+arrows by character or line, with Ctrl or Alt by word, Shift+Home/End to a line's ends. The
 * selection grows from a click's point, else from the first character; the page's selection
 * listener then fills the REDACT form, as for a mouse selection.
 */
function keyboardSelect(event, doc, text) {
  const keys = ["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Home", "End"];
  if (!event.shiftKey || !keys.includes(event.key)) return;
  event.preventDefault();
  const sel = window.getSelection();
  let anchor = 0;
  let focus = 0;
  if (sel.rangeCount > 0 && doc.contains(sel.anchorNode) && doc.contains(sel.focusNode)) {
    anchor = textOffset(doc, sel.anchorNode, sel.anchorOffset);
    focus = textOffset(doc, sel.focusNode, sel.focusOffset);
  }
  focus = movedFocus(text, focus, event.key, event.ctrlKey || event.altKey);
  const [anchorNode, anchorOffset] = nodeAt(doc, anchor);
  const [focusNode, focusOffset] = nodeAt(doc, focus);
  sel.setBaseAndExtent(anchorNode, anchorOffset, focusNode, focusOffset);
}

/** The window's text with the committed redactions (absolute spans) wrapped in <mark>. */
function markedText(text, start, spans) {
  const end = start + text.length;
  const parts = spans
    .map(([a, b]) => [Math.max(a, start) - start, Math.min(b, end) - start])
    .filter(([a, b]) => b > a)
    .sort((p, q) => p[0] - q[0]);
  const merged = [];
  for (const [a, b] of parts) {
    const last = merged[merged.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else merged.push([a, b]);
  }
  const out = [];
  let at = 0;
  for (const [a, b] of merged) {
    if (a > at) out.push(text.slice(at, a));
    out.push(el("mark", { text: text.slice(a, b) }));
    at = b;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}

export default function view(obs, ui, id) {
  // Under --profile seed001 our extra counters travel in metadata (the seed client's shape).
  const stepsLeft = obs.steps_left ?? (obs.metadata || {}).steps_left;
  const start = obs.cursor_position;
  const text = obs.visible_text;
  const doc = el("pre", { class: "doc", id: id("pii-text"), tabindex: 0, "aria-label": "document window" }, markedText(text, start, obs.redacted_spans));
  const pct = Math.round(100 * obs.progress_pct);
  const head = el(
    "div",
    { class: "row" },
    el("span", { class: "chip", text: `characters ${start}–${start + text.length} of ${obs.document_length}` }),
    el("span", { class: "chip", text: `${obs.redacted_spans.length} redacted` }),
    stepsLeft === undefined ? null : el("span", { class: "chip", text: `${stepsLeft} steps left` }),
    el("span", {
      class: "progress", role: "progressbar", title: `${pct}% read`, "aria-label": "document read",
      "aria-valuemin": 0, "aria-valuemax": 100, "aria-valuenow": pct, "aria-valuetext": `${pct}% read`,
    }, el("span", { style: { width: `${pct}%` } })),
  );
  const card = el("section", { class: "card stack", id: id("observation") }, el("h2", { text: "Document window" }), head, doc);
  if (obs.previous_actions.length) {
    card.append(el("div", { class: "muted selection" }, "Last actions: ", el("span", { class: "mono", text: obs.previous_actions.join(" · ") })));
  }
  if (!ui) return card;

  const startIn = el("input", { type: "number", id: id("redact-start"), min: 0, "aria-label": "start offset" });
  const endIn = el("input", { type: "number", id: id("redact-end"), min: 0, "aria-label": "end offset" });
  const label = el("select", { id: id("redact-label"), "aria-label": "label" }, ui.enums.label.map((l) => el("option", { value: l, text: l })));
  if (ui.draft.label) label.value = ui.draft.label; // the last label chosen stays chosen
  label.addEventListener("change", () => { ui.draft.label = label.value; });
  const shown = el("div", { class: "selection muted", id: id("redact-selection"), text: "Select text in the window (drag, double-click, or click then Shift+arrows) to redact it." });
  const redact = el("button", {
    class: "primary", id: id("act-REDACT"), disabled: true,
    onclick: () => ui.act({ action_type: "REDACT", start: Number(startIn.value), end: Number(endIn.value), label: label.value }),
  }, "REDACT");
  const refresh = () => {
    const a = Number(startIn.value);
    const b = Number(endIn.value);
    const ok = startIn.value !== "" && endIn.value !== "";
    redact.disabled = !ok;
    if (!ok) return;
    const inside = a >= start && b <= start + text.length && b > a;
    shown.textContent = inside ? `${a}–${b}: “${text.slice(a - start, b - start)}”` : `${a}–${b}`;
  };
  startIn.addEventListener("input", refresh);
  endIn.addEventListener("input", refresh);
  // One listener for every way a selection is made: a mouse drag or double click, and a phone's
  // long press and selection handles, which send the page no mouse or touch event when they move.
  // The event is the document's: the first one after this view is replaced removes the listener.
  const pick = () => {
    if (!doc.isConnected) {
      document.removeEventListener("selectionchange", pick);
      return;
    }
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return;
    const range = sel.getRangeAt(0);
    if (!doc.contains(range.startContainer) || !doc.contains(range.endContainer)) return;
    let a = textOffset(doc, range.startContainer, range.startOffset);
    let b = textOffset(doc, range.endContainer, range.endOffset);
    // A double click may take the space after a word with it: redact the word, not the space.
    while (a < b && /\s/.test(text[a])) a += 1;
    while (b > a && /\s/.test(text[b - 1])) b -= 1;
    if (b <= a) return;
    startIn.value = String(start + a);
    endIn.value = String(start + b);
    refresh();
  };
  document.addEventListener("selectionchange", pick);
  doc.addEventListener("keydown", (event) => keyboardSelect(event, doc, text));
  const moves = ["PREV_CHUNK", "NEXT_CHUNK", "SKIP", "FINISH"].filter((m) => ui.enums.action_type.includes(m));
  card.append(
    el("div", { class: "row" },
      el("label", { class: "muted" }, "start ", startIn),
      el("label", { class: "muted" }, "end ", endIn),
      el("label", { class: "muted" }, "label ", label),
      redact),
    shown,
    el("div", { class: "row" }, moves.map((m) => el("button", {
      id: id(`act-${m}`), class: m === "FINISH" ? "good" : "", onclick: () => ui.act({ action_type: m }),
    }, m))),
  );
  return card;
}
