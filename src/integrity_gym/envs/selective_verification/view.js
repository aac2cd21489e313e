// The selective_verification observation in the playground and the run viewer (``EnvExtras.view``): served at
// static/views/selective_verification.js and loaded by render.js's ``loadView``. Text is set as text, never parsed as HTML.

import { el, fmt } from "../render.js";

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

export default function view(obs, ui, id) {
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
