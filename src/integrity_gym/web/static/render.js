// Shared by the playground and the run viewer: DOM helpers, each environment's observation view,
// the step line, the grade card and the return curve. Text is always set as text (never parsed as
// HTML): posts, documents and model replies may contain markup.
//
// Ids: a page may show several episodes at once (the viewer's columns), so every id these renderers
// give, and every reference to one (label for=, output for=, radio group names), goes through
// ``scoped(scope)``. The playground shows one episode and passes no scope: its ids are plain
// (#pii-text, #act-REDACT, #grade ...); the viewer passes "run0-", "run1-".

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    // Through the CSSOM: the pages' policy forbids inline style attributes.
    else if (key === "style") Object.assign(node.style, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** The id maker of one rendering: ``name`` → ``scope + name``. */
function scoped(scope) {
  return (name) => `${scope}${name}`;
}

export function fmt(x, digits = 3) {
  return typeof x === "number" && Number.isFinite(x) ? x.toFixed(digits) : "–";
}

export function signed(x, digits = 3) {
  if (typeof x !== "number" || !Number.isFinite(x)) return "–";
  const text = Math.abs(x).toFixed(digits);
  if (Number(text) === 0) return text;
  return (x > 0 ? "+" : "−") + text;
}

function signClass(x) {
  return x > 0 ? "pos" : x < 0 ? "neg" : "";
}

/** The values a field of a JSON schema allows (its enum, directly or inside anyOf). */
export function enumOf(schema, field) {
  const prop = schema && schema.properties && schema.properties[field];
  if (!prop) return [];
  if (Array.isArray(prop.enum)) return prop.enum;
  for (const option of prop.anyOf || []) if (Array.isArray(option.enum)) return option.enum;
  return [];
}

// ------------------------------------------------------------------ pii_redaction

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

function piiView(obs, ui, id) {
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

// ------------------------------------------------------------------ information_integrity

function statusChip(status) {
  const cls = { true: "good", false: "bad", partially_true: "warn", unknown: "warn" }[status] || "";
  return el("span", { class: `chip ${cls}`, text: status.replace("_", " ") });
}

function stanceChip(stance) {
  const cls = { supports: "good", refutes: "bad", neutral: "" }[stance] || "";
  return el("span", { class: `chip ${cls}`, text: stance });
}

function integrityView(obs, ui, id) {
  const post = el(
    "section", { class: "card stack", id: id("observation") },
    el("h2", { text: obs.topic }),
    el("blockquote", { class: "post", text: obs.content }),
    el("div", { class: "row" },
      el("span", { class: `chip ${obs.harm_level === "high" ? "bad" : obs.harm_level === "medium" ? "warn" : ""}`, text: `harm ${obs.harm_level}` }),
      el("span", { class: "chip", text: `review date ${obs.review_date}` }),
      el("span", { class: "chip", text: `tier ${obs.task_difficulty}` }),
      el("span", { class: "chip", text: `${obs.steps_left} steps left` }),
      obs.status_flags.sufficient_evidence ? el("span", { class: "chip good", text: "sufficient evidence" }) : null,
      obs.status_flags.redundant_actions ? el("span", { class: "chip warn", text: `${obs.status_flags.redundant_actions} repeated` }) : null),
  );
  const claims = el("ul", { class: "items", id: id("claims") }, obs.claims.map((c) => el(
    "li", { "data-claim": c.id },
    el("div", { class: "body" },
      el("div", { class: "row" }, el("span", { class: "id mono", text: c.id }), statusChip(c.verification_status),
        c.verification_status !== "unverified" ? el("span", { class: "chip", text: `confidence ${fmt(c.confidence, 2)}` }) : null),
      el("div", { text: c.text })),
    ui ? el("button", { class: "small", id: id(`verify-${c.id}`), onclick: () => ui.act({ type: "verify_claim", claim_id: c.id }) },
      c.verification_status === "unverified" ? "Verify" : "Verify again") : null,
  )));
  const sources = el("ul", { class: "items", id: id("sources") }, obs.available_sources.map((s) => el(
    "li", { "data-source": s.id, class: s.checked ? "checked" : "" },
    el("div", { class: "body" },
      el("div", { class: "row" }, el("span", { class: "id mono", text: s.id }), el("span", { class: "muted", text: `on ${s.claim_id}` }),
        s.checked ? stanceChip(s.stance) : el("span", { class: "chip", text: "not checked" }),
        s.checked ? el("span", { class: "chip", title: "reliability" }, "reliability ", el("span", { class: "meter" }, el("span", { style: { width: `${Math.round(100 * (s.reliability || 0))}%` } })), ` ${fmt(s.reliability, 2)}`) : null,
        s.checked ? el("span", { class: "chip", text: s.source_type }) : null,
        s.checked ? el("span", { class: "chip", text: s.date }) : null,
        s.checked && s.satire ? el("span", { class: "chip bad", text: "satire" }) : null),
      el("div", { text: s.title }),
      s.checked ? el("div", { class: "muted mono selection", text: s.url }) : null,
      s.checked && s.text ? el("div", { class: "excerpt", text: s.text }) : null),
    ui ? el("button", { class: "small", id: id(`check-${s.id}`), onclick: () => ui.act({ type: "check_source", source_id: s.id }) },
      s.checked ? "Check again" : "Check") : null,
  )));
  const parts = [post, el("section", { class: "card" }, el("h2", { text: "Claims" }), claims),
    el("section", { class: "card" }, el("h2", { text: "Sources" }), sources)];
  if (ui) {
    // What the person has chosen and typed survives the re-render after each step (ui.draft).
    const draft = ui.draft;
    const reasoning = el("textarea", { id: id("reasoning"), "aria-label": "reasoning", placeholder: "Reasoning, e.g. “src_2 refutes claim_1. claim_1 is false. harm is high.”" });
    reasoning.value = draft.reasoning || "";
    reasoning.addEventListener("input", () => { draft.reasoning = reasoning.value; });
    const decide = el("button", { class: "primary", id: id("act-decide"), disabled: !draft.decision, onclick: () => {
      const action = { type: "decide", decision: draft.decision };
      if (reasoning.value.trim()) action.reasoning = reasoning.value;
      ui.act(action);
    } }, "Decide");
    const choices = el("div", { class: "choices", role: "radiogroup", "aria-label": "decision" }, ui.enums.decision.map((d) => el(
      "label", {}, el("input", {
        type: "radio", name: id("decision"), value: d, id: id(`decision-${d}`), checked: draft.decision === d,
        onchange: () => { draft.decision = d; decide.disabled = false; delete decide.dataset.off; },
      }), d)));
    parts.push(el("section", { class: "card stack", id: id("decide") }, el("h2", { text: "Decide" }), choices, reasoning, decide));
  }
  if (obs.interaction_history.length) {
    parts.push(el("section", { class: "card" }, el("h2", { text: "History" }), el("table", { class: "hist" },
      el("tbody", {}, obs.interaction_history.map((h) => el("tr", {},
        el("td", { text: String(h.step) }), el("td", { class: "mono", text: h.action }), el("td", { text: h.outcome }),
        el("td", { class: `num ${signClass(h.reward)}`, text: signed(h.reward) })))))));
  }
  return el("div", {}, parts);
}

// ------------------------------------------------------------------ selective_verification

/** A passage's paragraphs, with its Markdown tables (lines starting with '|') drawn as tables. */
function passageBlocks(passage) {
  return passage.split(/\n\s*\n/).map((block) => {
    const lines = block.trim().split("\n");
    if (!lines.every((line) => line.trim().startsWith("|"))) return el("p", { text: block.trim() });
    const cells = (line) => line.trim().replace(/^\||\|$/g, "").split("|").map((c) => c.trim());
    const rows = lines.filter((line) => !/^\|?[\s:|-]+\|?$/.test(line.trim())).map(cells);
    return el("div", { class: "tablewrap" }, el("table", { class: "hist" },
      el("thead", {}, el("tr", {}, rows[0].map((c) => el("th", { text: c })))),
      el("tbody", {}, rows.slice(1).map((r) => el("tr", {}, r.map((c) => el("td", { text: c })))))));
  });
}

function verificationView(obs, ui, id) {
  const shown = obs.modality === "image" && obs.image
    ? el("img", { class: "picture", id: id("picture"), src: obs.image, width: obs.image_width, height: obs.image_height, alt: "the picture the claim is about" })
    : el("div", { class: "post passage", id: id("passage") }, passageBlocks(obs.passage || ""));
  const card = el("div", { class: "stack" });
  const section = el("section", { class: "card sv", id: id("observation") }, el("div", {}, shown), card);
  card.append(
    el("h2", { text: obs.modality === "image" ? "Claim about the picture" : "Claim about the passage" }),
    el("div", { class: "claim", id: id("claim"), text: obs.claim }),
    el("div", { class: "row" },
      el("span", { class: "chip", text: `${obs.scoring_rule} rule` }),
      el("span", { class: "chip", text: `ABSTAIN pays ${fmt(obs.abstain_reward, 2)}` }),
      el("span", { class: "chip", text: `answer when P(correct) > ${fmt(obs.threshold, 3)}` })),
    el("details", {}, el("summary", { text: "Instructions the agent reads" }), el("pre", { text: obs.system_prompt })),
  );
  if (!ui) return section;
  const slider = el("input", { type: "range", id: id("confidence"), min: 0, max: 1, step: 0.01, value: 0.75 });
  const out = el("output", { for: id("confidence"), id: id("confidence-value"), text: "0.75" });
  slider.addEventListener("input", () => { out.textContent = Number(slider.value).toFixed(2); });
  const verdicts = ui.enums.verdict;
  card.append(
    el("div", { class: "slider" }, el("label", { for: id("confidence"), text: "Confidence that the verdict is right" }), slider, out),
    el("div", { class: "row" }, verdicts.map((v) => el("button", {
      id: id(`act-${v}`), class: v === "SUPPORTED" ? "good" : v === "REFUTED" ? "bad" : "",
      onclick: () => ui.act(v === "ABSTAIN" ? { verdict: v } : { verdict: v, confidence: Number(slider.value) }),
    }, v))),
  );
  return section;
}

// ------------------------------------------------------------------ dispatch

const VIEWS = {
  pii_redaction: piiView,
  information_integrity: integrityView,
  selective_verification: verificationView,
};

/**
 * The observation as a person reads it. ``ui`` (the playground) adds the controls, null shows it
 * only; ``scope`` prefixes its ids (one per episode shown on the page).
 */
export function renderObservation(env, obs, { ui = null, scope = "" } = {}) {
  const id = scoped(scope);
  if (obs === null || obs === undefined) {
    return el("section", { class: "card empty", id: id("observation"), text: "Observation not recorded (the run used --no-observations)." });
  }
  const view = VIEWS[env];
  if (view) return view(obs, ui, id);
  return el("section", { class: "card", id: id("observation") }, el("pre", { class: "json", text: JSON.stringify(obs, null, 2) }));
}

function clip(text, most) {
  return text.length > most ? `${text.slice(0, most - 1)}…` : text;
}

/** One step: action, reward, its non-zero components and the rejection message, if any. */
export function stepLine(step) {
  const parts = Object.entries(step.reward_breakdown || {}).filter(([, v]) => v);
  return el("li", { "data-step": step.step },
    el("div", { class: "row" },
      el("span", { class: "muted", text: `#${step.step}` }),
      // A model's unreadable reply can be long: the line shows its start, the tooltip all of it.
      el("span", { class: "mono", title: step.action_text, text: clip(step.action_text, 160) }),
      el("span", { class: `${signClass(step.reward)}`, text: signed(step.reward) }),
      step.done ? el("span", { class: "chip", text: "done" }) : null),
    parts.length ? el("div", { class: "row" }, parts.map(([k, v]) => el("span", { class: `chip ${v > 0 ? "good" : "bad"}`, text: `${k} ${signed(v)}` }))) : null,
    step.error ? el("div", { class: "err", text: `rejected: ${step.error}` }) : null);
}

/** A dimension that counts things (characters, entities) rather than scoring in [0, 1]: no bar. */
function isCount(name, value) {
  return Number.isInteger(value) && (value > 1 || /(_chars|positives|negatives|_count|steps)$/.test(name));
}

function successChip(grade) {
  if (grade.success) return el("span", { class: "chip good", text: "success" });
  // Reaching the threshold is not always success (selective verification judges success on a
  // task's mean; information_integrity also asks for sound reasoning): say just that.
  if (grade.score >= grade.threshold) return el("span", { class: "chip warn", text: "threshold reached, not counted a success" });
  return el("span", { class: "chip bad", text: "below threshold" });
}

/** Score, success, the per-dimension breakdown with bars, and explain() text when given; ids as renderObservation's. */
export function gradeCard(grade, { explain = null, title = "Grade", scope = "" } = {}) {
  const id = scoped(scope);
  const dims = Object.entries(grade.breakdown || {});
  return el("section", { class: "card stack", id: id("grade") },
    el("h2", { text: title }),
    el("div", { class: "row" },
      el("span", { class: "score", text: fmt(grade.score) }),
      successChip(grade),
      el("span", { class: "muted", text: `threshold ${fmt(grade.threshold, 2)}` })),
    el("table", { class: "dims" }, el("tbody", {}, dims.map(([k, v]) => el("tr", {},
      el("td", { text: k }),
      el("td", { class: "barcell" }, isCount(k, v) ? null : el("div", { class: "bar-h" }, el("span", { style: { width: `${Math.max(0, Math.min(1, v)) * 100}%` } }))),
      el("td", { class: "num", text: isCount(k, v) ? String(v) : fmt(v) }))))),
    explain ? el("p", { class: "explain", id: id("explain"), text: explain }) : null);
}

/**
 * Running return by step as an inline SVG; ``series`` is a list of reward lists, ``at`` the current
 * step. With ``onpick``, a click on the chart calls it with the nearest step.
 */
export function returnCurve(series, at = null, onpick = null) {
  const W = 480, H = 160, L = 44, R = 10, T = 10, B = 24;
  const curves = series.map((rewards) => {
    let total = 0;
    return [0, ...rewards.map((r) => (total += r))];
  });
  const steps = Math.max(1, ...curves.map((c) => c.length - 1));
  const values = curves.flat();
  let lo = Math.min(0, ...values), hi = Math.max(0, ...values);
  if (hi - lo < 1e-9) { hi += 1; lo -= 0; }
  const x = (i) => L + ((W - L - R) * i) / steps;
  const y = (v) => T + ((H - T - B) * (hi - v)) / (hi - lo);
  const root = svg("svg", { class: "curve", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "return by step" });
  root.append(
    svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }),
    svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }),
    svg("line", { class: "zero", x1: L, y1: y(0), x2: W - R, y2: y(0) }),
    svg("text", { x: L - 4, y: y(hi) + 4, "text-anchor": "end" }, hi.toFixed(2)),
    svg("text", { x: L - 4, y: y(lo) + 4, "text-anchor": "end" }, lo.toFixed(2)),
    svg("text", { x: L, y: H - 6 }, "step 0"),
    svg("text", { x: W - R, y: H - 6, "text-anchor": "end" }, `step ${steps}`),
  );
  if (at !== null) root.append(svg("line", { class: "now", x1: x(at), y1: T, x2: x(at), y2: H - B }));
  if (onpick) {
    root.classList.add("pickable");
    root.addEventListener("click", (event) => {
      const box = root.getBoundingClientRect();
      const vx = ((event.clientX - box.left) / box.width) * W;
      onpick(Math.max(0, Math.min(steps, Math.round(((vx - L) / (W - L - R)) * steps))));
    });
  }
  curves.forEach((c, k) => {
    root.append(svg("polyline", { class: `run${k}`, points: c.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ") }));
    const i = at === null ? c.length - 1 : Math.min(at, c.length - 1);
    root.append(svg("circle", { class: `dot${k}`, cx: x(i), cy: y(c[i]), r: 3.5 }));
  });
  return root;
}
