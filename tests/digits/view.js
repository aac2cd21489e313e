// The toy environment's page view (ToyEnv.extras.view): the revealed digits, one chip each.

import { el } from "../render.js";

export default function view(obs, ui, id) {
  const digits = Object.entries(obs.seen).map(([i, d]) => el("span", { class: "chip", "data-digit": i, text: `digit ${i}: ${d}` }));
  return el("section", { class: "card", id: id("observation") },
    el("h2", { text: "Three hidden digits" }),
    el("div", { class: "row", id: id("digits") }, digits.length ? digits : el("span", { class: "muted", text: "none revealed yet" })));
}
