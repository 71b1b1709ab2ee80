// Models: what /v1/infer/models lists, with the health and load /healthz reports.

import { getJSON, health } from "./api.js";
import { h, number, show } from "./dom.js";

// health and load are polled (/healthz is outside /v1/infer: no usage row); the listing is
// read once per visit
const REFRESH_MS = 5000;

function badge(ok, yes = "healthy", no = "unhealthy") {
  return h("span", { class: `badge ${ok ? "ok" : "bad"}` }, ok ? yes : no);
}

function capabilities(caps) {
  const on = Object.entries(caps || {}).filter(([, v]) => v === true).map(([k]) => k);
  const chips = on.map((name) => h("span", { class: "chip" }, name.replace("_", " ")));
  if (caps && caps.tool_calling) chips.push(h("span", { class: "chip dim" }, `tools: ${caps.tool_calling}`));
  return chips;
}

function modelRow(model, state, queue) {
  const card = model.b3os || {};
  const load = state || {};
  const waiting = (queue && queue.waiting) ?? load.waiting ?? 0;
  return h("tr", { "data-model": model.id },
    h("td", {}, h("div", { class: "strong" }, model.id), card.display_name && card.display_name !== model.id
      ? h("div", { class: "muted small" }, card.display_name) : null),
    h("td", {}, card.kind || "—"),
    h("td", {}, state ? badge(load.healthy) : h("span", { class: "muted" }, "—")),
    h("td", { class: "num" }, number((queue && queue.running) ?? load.active ?? 0)),
    h("td", { class: "num" }, number(waiting)),
    h("td", { class: "num" }, number(card.context_window)),
    h("td", { class: "num" }, number(card.max_output_tokens)),
    h("td", {}, capabilities(card.capabilities)));
}

function modelsTable(models, status) {
  const states = status.models || {};
  const queues = status.queues || {};
  return h("table", { id: "models-table" },
    h("thead", {}, h("tr", {}, ["Model", "Kind", "Health", "Running", "Waiting", "Context", "Max output", "Capabilities"]
      .map((name, i) => h("th", { class: i >= 3 && i <= 6 ? "num" : null }, name)))),
    h("tbody", {}, models.map((m) => modelRow(m, states[m.id], queues[m.id]))));
}

function nodesTable(nodes) {
  return h("table", { id: "nodes-table" },
    h("thead", {}, h("tr", {}, ["Node", "State", "Models", "Last problem"].map((n) => h("th", {}, n)))),
    h("tbody", {}, Object.entries(nodes).map(([url, node]) => h("tr", {},
      h("td", { class: "mono" }, url), h("td", {}, badge(node.up, "up", "down")),
      h("td", {}, (node.models || []).join(", ")), h("td", { class: "muted" }, node.problem || "—")))));
}

export class ModelsView {
  constructor(root) {
    this.root = root;
  }

  async mount() {
    this.listing = await getJSON("/models");
    await this.refresh();
    this.timer = setInterval(() => this.refresh(), REFRESH_MS);
  }

  unmount() {
    clearInterval(this.timer);
  }

  async refresh() {
    const listing = this.listing;
    const status = await health();
    const ok = status.status === "ok";
    show(this.root,
      h("section", { class: "card" },
        h("div", { class: "card-head" },
          h("h2", {}, "Models"),
          h("span", { id: "server-status" }, badge(ok, "server ok", `server ${status.status}`)),
          h("span", { class: "spacer" }),
          h("span", { class: "muted small" }, `refreshed ${new Date().toLocaleTimeString("en-GB")}`)),
        listing.data.length ? modelsTable(listing.data, status) : h("p", { class: "muted" }, "No model is served.")),
      status.nodes ? h("section", { class: "card" }, h("h2", {}, "Nodes"), nodesTable(status.nodes)) : null);
  }
}
