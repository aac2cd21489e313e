// The run viewer: the episodes of one or two runs, filters, and a step-by-step trajectory. With two
// runs, an episode is the same (task, seed, epoch) in both, shown side by side.
import { el, fmt, gradeCard, loadView, renderObservation, returnCurve, signed, stepLine } from "./render.js";

const $ = (id) => document.getElementById(id);
const MAX_ROWS = 500;
const state = { runs: [], rows: [], shown: [], open: null, records: [], at: 0 };

function outcome(ep) {
  if (!ep) return "missing";
  if (ep.error) return "error";
  return ep.success ? "success" : "failure";
}

function scoreCell(ep) {
  if (!ep) return el("td", { class: "muted", text: "–" });
  const o = outcome(ep);
  // A score at the threshold without success (success judged on the task's mean, or another
  // condition unmet): neither green nor red.
  const tone = o === "success" ? "good" : o === "failure" && ep.score >= ep.threshold ? "" : "bad";
  // A cut-off is not a failure of the agent's answer: the list marks it where the grade is.
  const cut = ep.truncated ? el("span", { class: "chip warn cut", title: "stopped by the step cap (--max-steps)", text: "cut" }) : null;
  return el("td", { class: "num" }, el("span", { class: `chip ${tone}`, text: o === "error" ? "error" : fmt(ep.score) }), cut);
}

/** Model use of an episode, in words: tokens and latency of its model calls (llm agents only). */
function usageText(usage) {
  if (!usage || !usage.llm_calls) return null;
  const parts = [`${usage.llm_calls} model call${usage.llm_calls === 1 ? "" : "s"}`];
  if (usage.prompt_tokens !== null && usage.prompt_tokens !== undefined) parts.push(`${usage.prompt_tokens} prompt + ${usage.completion_tokens ?? 0} completion tokens`);
  if (usage.latency_s !== null && usage.latency_s !== undefined) parts.push(`${usage.latency_s.toFixed(1)} s waiting for the model`);
  return parts.join(" · ");
}

function shortLabel(label) {
  return label.length > 12 ? `${label.slice(0, 11)}…` : label;
}

/** The task's name, with its environment small above it (ids are long for a narrow list). */
function taskCell(id) {
  const [env, name] = id.includes("/") ? id.split("/", 2) : ["", id];
  return el("td", { title: id }, el("div", { class: "env-line", text: env }), el("div", { text: name }));
}

/** One row per (task, seed, epoch); each run's episode of it, if the run played it. */
function joinRows(runs) {
  const rows = new Map();
  runs.forEach((run, r) => run.episodes.forEach((ep, n) => {
    const key = `${ep.task_id}\u0000${ep.seed}\u0000${ep.epoch}`;
    if (!rows.has(key)) rows.set(key, { key, task_id: ep.task_id, seed: ep.seed, epoch: ep.epoch, eps: runs.map(() => null), nums: runs.map(() => null) });
    rows.get(key).eps[r] = ep;
    rows.get(key).nums[r] = n;
  }));
  return [...rows.values()].sort((a, b) => a.task_id.localeCompare(b.task_id) || a.seed - b.seed || a.epoch - b.epoch);
}

function fillFilters() {
  const tasks = [...new Set(state.rows.map((r) => r.task_id))];
  $("filter-task").replaceChildren(el("option", { value: "", text: `all tasks (${tasks.length})` }), ...tasks.map((t) => el("option", { value: t, text: t })));
  const outcomes = [["", "any outcome"], ["success", "success"], ["failure", "below threshold"], ["error", "failed to run"]];
  if (state.runs.length === 2) outcomes.push(["differs", "outcome differs between runs"], ["better", `${state.runs[1].label} scores higher`], ["worse", `${state.runs[1].label} scores lower`]);
  $("filter-outcome").replaceChildren(...outcomes.map(([v, t]) => el("option", { value: v, text: t })));
  const params = new URLSearchParams(window.location.hash.slice(1));
  if (params.get("task") && tasks.includes(params.get("task"))) $("filter-task").value = params.get("task");
  if (params.get("outcome")) $("filter-outcome").value = params.get("outcome");
}

function keep(row) {
  const task = $("filter-task").value;
  const wanted = $("filter-outcome").value;
  if (task && row.task_id !== task) return false;
  const [a, b] = row.eps;
  const score = (ep) => (ep && !ep.error ? ep.score : null);
  switch (wanted) {
    case "": return true;
    case "differs": return outcome(a) !== outcome(b);
    case "better": return score(a) !== null && score(b) !== null && score(b) > score(a);
    case "worse": return score(a) !== null && score(b) !== null && score(b) < score(a);
    default: return row.eps.some((ep) => outcome(ep) === wanted);
  }
}

function renderList() {
  state.shown = state.rows.filter(keep);
  $("count").textContent = `${state.shown.length} of ${state.rows.length} episodes`;
  // Comparing: the grades side by side; one run: its grade and return.
  const withReturn = state.runs.length === 1;
  const head = el("tr", {}, el("th", { text: "task" }), el("th", { class: "num", text: "seed" }),
    ...state.runs.flatMap((run, r) => [el("th", { class: `runname r${r}`, title: run.label, text: withReturn ? "grade" : shortLabel(run.label) }),
      withReturn ? el("th", { class: "num", text: "return" }) : null]));
  // A table of many thousand rows makes the page slow: show the first ones, the filters narrow.
  const listed = state.shown.slice(0, MAX_ROWS);
  const body = el("tbody", {}, listed.map((row) => el("tr", {
    "data-key": row.key, class: state.open && state.open.key === row.key ? "selected" : "", onclick: () => openRow(row),
  },
  taskCell(row.task_id), el("td", { class: "num", text: row.epoch ? `${row.seed} (epoch ${row.epoch})` : String(row.seed) }),
  ...row.eps.flatMap((ep) => [scoreCell(ep), withReturn ? el("td", { class: "num", text: ep ? signed(ep.total_return) : "–" }) : null]))));
  $("list").replaceChildren(state.shown.length
    ? el("div", { class: "tablewrap" }, el("table", { class: "eps", id: "episodes" }, el("thead", {}, head), body))
    : el("div", { class: "empty", text: "No episode matches these filters." }));
  if (listed.length < state.shown.length) {
    $("list").append(el("div", { class: "muted", id: "more", text: `The first ${listed.length} are listed; choose a task or an outcome to see the others.` }));
  }
  const params = new URLSearchParams();
  if ($("filter-task").value) params.set("task", $("filter-task").value);
  if ($("filter-outcome").value) params.set("outcome", $("filter-outcome").value);
  window.history.replaceState(null, "", params.toString() ? `#${params}` : window.location.pathname);
}

async function openRow(row) {
  state.open = row;
  for (const tr of document.querySelectorAll("#episodes tbody tr")) tr.classList.toggle("selected", tr.dataset.key === row.key);
  try {
    state.records = await Promise.all(row.nums.map((n, r) => (n === null ? null : fetch(`api/episode/${r}/${n}`).then((x) => {
      if (!x.ok) throw new Error(`episode ${n} of run ${r}: ${x.status}`);
      return x.json();
    }))));
    await Promise.all(state.records.map((rec) => rec && loadView(rec.env)));
  } catch (error) {
    $("banner").textContent = error.message;
    $("banner").hidden = false;
    return;
  }
  state.at = 0;
  renderDetail();
  if (window.matchMedia("(max-width: 900px)").matches) $("detail").scrollIntoView({ block: "start" });
}

function lastStep() {
  return Math.max(0, ...state.records.map((rec) => (rec ? rec.trajectory.length : 0)));
}

function go(at) {
  state.at = Math.max(0, Math.min(lastStep(), at));
  update();
}

function runColumn(rec, r) {
  const run = state.runs[r];
  if (!rec) return el("div", { class: "card empty", text: `${run.label} did not play this episode.` });
  const n = rec.trajectory.length;
  const at = Math.min(state.at, n);
  const step = at > 0 ? rec.trajectory[at - 1] : null;
  const obs = at > 0 ? step.observation : rec.reset_observation;
  const total = rec.trajectory.slice(0, at).reduce((s, x) => s + x.reward, 0);
  // Each column renders the same parts: its ids carry the run's number (run0-grade, run1-grade).
  const scope = `run${r}-`;
  const head = el("section", { class: "card stack" },
    el("div", { class: "row" }, el("span", { class: `runname r${r}`, id: `${scope}name`, text: run.label }),
      el("span", { class: "chip", text: `${n} step${n === 1 ? "" : "s"}` }),
      rec.truncated ? el("span", { class: "chip warn", text: "stopped by the step cap" }) : null,
      usageText(rec.usage) ? el("span", { class: "chip usage", id: `${scope}usage`, text: usageText(rec.usage) }) : null),
    el("div", { class: "kv" },
      el("div", { text: "step" }), el("div", { class: "step-now", text: at === 0 ? "0 (reset)" : state.at > n ? `${n} (ended)` : String(at) }),
      el("div", { text: "return so far" }), el("div", { class: "return-now", text: signed(total) })),
    step ? el("ol", { class: "steps" }, stepLine(step)) : el("div", { class: "muted", text: "The first observation, before any action." }),
    step && step.llm ? el("details", {}, el("summary", { text: "model call" }), el("pre", { class: "json", text: JSON.stringify(step.llm, null, 2) })) : null,
    rec.error ? el("div", { class: "err", text: `episode failed: ${rec.error}` }) : null);
  const parts = [head, renderObservation(rec.env, obs, { scope })];
  if (rec.grade) parts.push(gradeCard(rec.grade, { title: "Final grade", scope, explain: rec.explanation || null }));
  return el("div", { class: "run-col", "data-run": r, role: "region", "aria-labelledby": `${scope}name` }, parts);
}

/** The episode's frame (title, stepper, chart, columns), built once per episode; ``update`` fills it. */
function renderDetail() {
  const row = state.open;
  const last = lastStep();
  // The slider stays the same element while the step changes, so dragging it keeps working.
  const slider = el("input", { type: "range", id: "step-slider", min: 0, max: last, step: 1, value: state.at, "aria-label": "step" });
  slider.addEventListener("input", () => go(Number(slider.value)));
  const legend = el("div", { class: "row" }, state.runs.map((run, r) => (state.records[r] ? el("span", { class: `runname r${r}`, text: `— ${run.label}` }) : null)));
  $("detail").replaceChildren(
    el("section", { class: "card stack" },
      el("h2", { text: `${row.task_id} · seed ${row.seed}${row.epoch ? ` · epoch ${row.epoch}` : ""}` }),
      el("div", { class: "stepper" },
        el("button", { id: "step-prev", onclick: () => go(state.at - 1), "aria-label": "previous step" }, "◀ prev"),
        slider,
        el("button", { id: "step-next", onclick: () => go(state.at + 1), "aria-label": "next step" }, "next ▶"),
        el("span", { class: "muted", id: "step-label" })),
      el("div", { id: "curve" }), state.runs.length > 1 ? legend : null),
    el("div", { class: "runs", id: "columns" }),
  );
  update();
}

function update() {
  const last = lastStep();
  $("step-slider").value = String(state.at);
  $("step-prev").disabled = state.at === 0;
  $("step-next").disabled = state.at >= last;
  $("step-label").textContent = `step ${state.at} of ${last}`;
  $("curve").replaceChildren(returnCurve(state.records.filter(Boolean).map((rec) => rec.trajectory.map((s) => s.reward)), state.at, go));
  $("columns").replaceChildren(...state.records.map(runColumn));
}

async function init() {
  try {
    const reply = await fetch("api/runs");
    state.runs = (await reply.json()).runs;
  } catch (error) {
    $("banner").textContent = `could not load the runs: ${error.message}`;
    $("banner").hidden = false;
    return;
  }
  $("runs-line").replaceChildren(...state.runs.flatMap((run, r) => [
    r ? " vs " : "", el("span", { class: `runname r${r}`, title: run.path, text: run.label }),
    ` (${run.episodes.length} episodes${run.database.status ? `, ${run.database.status}` : ""})`]));
  state.rows = joinRows(state.runs);
  fillFilters();
  $("filter-task").addEventListener("change", renderList);
  $("filter-outcome").addEventListener("change", renderList);
  $("filters").addEventListener("submit", (e) => e.preventDefault());
  document.addEventListener("keydown", (event) => {
    if (!state.open || event.target instanceof HTMLInputElement && event.target.type !== "range" || event.target instanceof HTMLSelectElement) return;
    if (event.key === "ArrowRight") { go(state.at + 1); event.preventDefault(); }
    if (event.key === "ArrowLeft") { go(state.at - 1); event.preventDefault(); }
  });
  renderList();
  document.body.dataset.ready = "1";
}

init();
