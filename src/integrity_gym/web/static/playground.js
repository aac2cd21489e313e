// The playground: one episode at a time over the server's HTTP API (/<env>/reset, /<env>/step,
// /<env>/grade/{id}, DELETE /<env>/session/{id}), exactly what any client may call. Every URL is
// relative to this page (…/web/), so the page works behind a path prefix and under --root.
import { el, enumOf, gradeCard, loadView, renderObservation, returnCurve, signed, stepLine } from "./render.js";

const $ = (id) => document.getElementById(id);
const api = (path) => new URL(`../${path}`, window.location.href).toString();
const own = (path) => new URL(path, window.location.href).toString();

const state = { tasks: [], env: null, task: null, sid: null, steps: [], total: 0, done: false, busy: false, schemas: {}, draft: {} };

/** Fetch JSON; an error reply throws with the server's message (detail) and code. */
async function call(url, options = {}) {
  const response = await fetch(url, { headers: { "content-type": "application/json" }, ...options });
  let body = null;
  try { body = await response.json(); } catch { body = null; }
  if (!response.ok) {
    const error = new Error((body && body.detail) || `${response.status} ${response.statusText}`);
    error.code = body && body.code;
    error.status = response.status;
    throw error;
  }
  return body;
}

function showError(error) {
  const banner = $("banner");
  let text = error.message;
  if (error.code === "SESSION_NOT_FOUND") text = `This episode's session is gone (closed, or idle longer than the server keeps sessions). Start the episode again. (${error.message})`;
  else if (error.code === "CAPACITY_REACHED") text = `The server is at capacity: ${error.message}`;
  banner.textContent = error.code ? `${error.code}: ${text}` : text;
  banner.hidden = false;
}

function clearError() { $("banner").hidden = true; $("banner").textContent = ""; }

function actionText(action) {
  if (action.action_type) return action.action_type === "REDACT" ? `REDACT(${action.start},${action.end},${action.label})` : action.action_type;
  if (action.type) return `${action.type}(${action.claim_id || action.source_id || action.decision})`;
  if (action.verdict) return action.verdict === "ABSTAIN" ? "ABSTAIN" : `${action.verdict}(${action.confidence})`;
  return JSON.stringify(action);
}

function setBusy(busy) {
  state.busy = busy;
  for (const button of $("stage").querySelectorAll("button")) button.disabled = busy || state.done || button.dataset.off === "1";
  document.body.toggleAttribute("data-busy", busy);
}

function renderSide() {
  $("return").textContent = signed(state.total);
  $("return").className = `ret ${state.total > 0 ? "pos" : state.total < 0 ? "neg" : ""}`;
  $("step-count").textContent = state.steps.length ? `after ${state.steps.length} step${state.steps.length > 1 ? "s" : ""}` : "no steps yet";
  $("curve").replaceChildren(state.steps.length ? returnCurve([state.steps.map((s) => s.reward)]) : "");
  $("steps").replaceChildren(...state.steps.slice().reverse().map(stepLine));
  // On a phone the side panel is below the page: a bar at the bottom keeps the last reward in view.
  const last = state.steps[state.steps.length - 1];
  $("mini").hidden = !last;
  if (last) {
    $("mini").replaceChildren(...[
      el("span", {}, "return ", el("b", { text: signed(state.total) })),
      el("span", { class: "mono", text: `#${last.step} ${last.action_text} ${signed(last.reward)}` }),
      last.error ? el("span", { class: "err", text: "rejected" }) : null,
      state.done ? el("a", { href: "#result", text: "grade ↓" }) : null,
    ].filter(Boolean));
  }
}

function renderStage(observation) {
  const ui = state.done ? null : { act, enums: state.enums, draft: state.draft };
  const view = renderObservation(state.env, observation, { ui });
  $("stage").replaceChildren(view);
  if (state.done) $("stage").prepend(el("div", { class: "card muted", id: "ended", text: "The episode has ended. Start another one above." }));
  // REDACT stays off until a span is chosen (render.js enables it).
  for (const button of $("stage").querySelectorAll("button")) if (button.disabled) button.dataset.off = "1";
}

async function closeSession() {
  if (!state.sid) return;
  const url = api(`${state.env}/session/${encodeURIComponent(state.sid)}`);
  state.sid = null;
  try { await fetch(url, { method: "DELETE" }); } catch { /* the server reaps it after its TTL anyway */ }
}

async function start(event) {
  event.preventDefault();
  if (state.busy) return;
  clearError();
  const spec = state.tasks.find((t) => t.id === $("task").value);
  const seed = Number($("seed").value);
  setBusy(true);
  try {
    await closeSession();
    if (!state.schemas[spec.env]) state.schemas[spec.env] = (await call(api(`${spec.env}/schema`))).action;
    await loadView(spec.env);
    const reply = await call(api(`${spec.env}/reset`), { method: "POST", body: JSON.stringify({ task: spec.id, seed }) });
    const schema = state.schemas[spec.env];
    Object.assign(state, {
      env: spec.env, task: spec, sid: reply.session_id, steps: [], total: 0, done: Boolean(reply.done), draft: {},
      enums: { label: enumOf(schema, "label"), action_type: enumOf(schema, "action_type"), decision: enumOf(schema, "decision"), verdict: enumOf(schema, "verdict") },
    });
    $("result").replaceChildren();
    const url = new URL(window.location.href);
    url.searchParams.set("task", spec.id);
    url.searchParams.set("seed", String(seed));
    window.history.replaceState(null, "", url);
    renderStage(reply.observation);
    renderSide();
  } catch (error) {
    // The episode shown before (if any) was closed above: clear it, its buttons and its grade.
    Object.assign(state, { steps: [], total: 0, done: false });
    $("stage").replaceChildren(el("div", { class: "card empty", text: "No episode is running." }));
    $("result").replaceChildren();
    renderSide();
    showError(error);
  } finally {
    setBusy(false);
  }
}

async function act(action) {
  if (state.busy || state.done || !state.sid) return;
  clearError();
  setBusy(true);
  try {
    const result = await call(api(`${state.env}/step`), { method: "POST", body: JSON.stringify({ session_id: state.sid, action }) });
    const info = result.info || {};
    state.total += result.reward;
    state.done = result.done;
    state.steps.push({
      step: state.steps.length + 1, action_text: actionText(action), reward: result.reward,
      reward_breakdown: info.reward_breakdown || {}, done: result.done, error: info.error || null,
    });
    renderStage(result.observation);
    renderSide();
    if (info.error) showError(new Error(`The environment rejected the action: ${info.error}`));
    if (result.done) await finish();
  } catch (error) {
    showError(error);
  } finally {
    setBusy(false);
  }
}

async function finish() {
  const sid = encodeURIComponent(state.sid);
  const grade = await call(api(`${state.env}/grade/${sid}`));
  const words = await call(own(`api/explain/${state.env}/${sid}`));
  $("result").replaceChildren(gradeCard(grade, { explain: words.explain }));
  await closeSession(); // free the server's slot: the episode is over
}

async function init() {
  $("setup").addEventListener("submit", start);
  window.addEventListener("pagehide", () => {
    if (state.sid) fetch(api(`${state.env}/session/${encodeURIComponent(state.sid)}`), { method: "DELETE", keepalive: true });
  });
  try {
    state.tasks = await call(api("tasks"));
  } catch (error) {
    showError(error);
    return;
  }
  const groups = new Map();
  for (const t of state.tasks) {
    if (!groups.has(t.env)) groups.set(t.env, el("optgroup", { label: t.env }));
    groups.get(t.env).append(el("option", { value: t.id, text: `${t.id} (${t.tier})` }));
  }
  $("task").replaceChildren(...groups.values());
  const wanted = new URL(window.location.href).searchParams;
  if (wanted.get("task") && state.tasks.some((t) => t.id === wanted.get("task"))) $("task").value = wanted.get("task");
  if (wanted.get("seed") !== null && /^\d+$/.test(wanted.get("seed"))) $("seed").value = wanted.get("seed");
  const describe = () => {
    const t = state.tasks.find((x) => x.id === $("task").value);
    $("task-info").textContent = t ? `${t.description || ""} · threshold ${t.success_threshold} · step budget ${t.budget_text}` : "";
  };
  $("task").addEventListener("change", describe);
  describe();
  document.body.dataset.ready = "1";
}

init();
