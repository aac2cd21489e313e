// Shared by the playground and the run viewer: DOM helpers, each environment's observation view (loaded from its folder),
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

export function signClass(x) {
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

// ------------------------------------------------------------------ views

/** Each environment's page view, once loaded: env -> its view function, or null (none declared). */
const VIEWS = new Map();

/**
 * Load the page view environment ``env`` declares (``EnvExtras.view``, served at
 * static/views/<env>.js), once; without one its observations show as a JSON tree.
 */
export async function loadView(env) {
  if (!VIEWS.has(env)) {
    let view = null;
    try {
      view = (await import(`./views/${encodeURIComponent(env)}.js`)).default;
    } catch {
      view = null; // 404: the environment declares no view
    }
    VIEWS.set(env, view);
  }
  return VIEWS.get(env);
}

/**
 * The observation as a person reads it. ``ui`` (the playground) adds the controls, null shows it
 * only; ``scope`` prefixes its ids (one per episode shown on the page).
 */
export function renderObservation(env, obs, { ui = null, scope = "" } = {}) {
  const id = scoped(scope);
  if (obs === null || obs === undefined) {
    return el("section", { class: "card empty", id: id("observation"), text: "Observation not recorded (the run used --no-observations)." });
  }
  const view = VIEWS.get(env); // loadView(env) first
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
