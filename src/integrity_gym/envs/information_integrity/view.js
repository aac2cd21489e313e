// The information_integrity observation in the playground and the run viewer (``EnvExtras.view``): served at
// static/views/information_integrity.js and loaded by render.js's ``loadView``. Text is set as text, never parsed as HTML.

import { el, fmt, signed, signClass } from "../render.js";

function statusChip(status) {
  const cls = { true: "good", false: "bad", partially_true: "warn", unknown: "warn" }[status] || "";
  return el("span", { class: `chip ${cls}`, text: status.replace("_", " ") });
}

function stanceChip(stance) {
  const cls = { supports: "good", refutes: "bad", neutral: "" }[stance] || "";
  return el("span", { class: `chip ${cls}`, text: stance });
}

export default function view(obs, ui, id) {
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
