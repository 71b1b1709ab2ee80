// Usage: the ledger per time bucket, per key or per model, as stacked bars and totals.

import { getJSON } from "./api.js";
import { PALETTE, stackedBars } from "./chart.js";
import { h, number, show } from "./dom.js";

const BUCKETS = [["minute", "last hour, per minute", 60e3], ["hour", "last day, per hour", 3600e3], ["day", "last 30 days, per day", 86400e3]];
const METRICS = [
  ["tokens", "tokens (input + output)", (p) => p.input_tokens + p.output_tokens],
  ["requests", "requests", (p) => p.requests],
  ["input_tokens", "input tokens", (p) => p.input_tokens],
  ["output_tokens", "output tokens", (p) => p.output_tokens],
  ["cached_tokens", "cached input tokens", (p) => p.cached_tokens],
  ["errors", "errors", (p) => p.errors],
];

function bucketStarts(since, step, now) {
  const starts = [];
  // minutes, hours and days since the epoch all start on UTC boundaries
  for (let t = Math.floor(Date.parse(since) / step) * step; t <= now; t += step) starts.push(new Date(t).toISOString().replace(".000Z", "Z"));
  return starts;
}

function label(start, bucket) {
  return bucket === "day" ? start.slice(5, 10) : start.slice(11, 16);
}

function option(value, text, selected) {
  return h("option", { value, selected: value === selected }, text);
}

export class UsageView {
  constructor(root) {
    this.root = root;
    this.bucket = "hour";
    this.metric = "tokens";
    this.by = "key";
  }

  async mount() {
    await this.refresh();
  }

  unmount() {}

  async refresh() {
    this.series = await getJSON(`/admin/usage?bucket=${this.bucket}`);
    this.render();
  }

  groupName(point) {
    if (this.by === "model") return point.model || "(no model)";
    if (!point.key_id) return "(no key)";
    const name = this.series.keys[point.key_id];
    return name ? `${name} · ${point.key_id}` : point.key_id;
  }

  chartData() {
    const [, , step] = BUCKETS.find(([b]) => b === this.bucket);
    const [, , value] = METRICS.find(([m]) => m === this.metric);
    const starts = bucketStarts(this.series.since, step, Date.now());
    const index = new Map(starts.map((start, i) => [start, i]));
    const groups = new Map();
    for (const point of this.series.data) {
      const name = this.groupName(point);
      if (!groups.has(name)) groups.set(name, new Array(starts.length).fill(0));
      const i = index.get(point.start);
      if (i !== undefined) groups.get(name)[i] += value(point);
    }
    const series = [...groups].map(([name, values]) => ({ name, values }));
    return { labels: starts.map((start) => label(start, this.bucket)), series };
  }

  controls() {
    const select = (id, options, current, set) => h("select", { id, onchange: (e) => set(e.target.value) },
      options.map(([v, t]) => option(v, t, current)));
    return h("div", { class: "controls" },
      select("usage-bucket", BUCKETS, this.bucket, (v) => { this.bucket = v; this.refresh(); }),
      select("usage-metric", METRICS, this.metric, (v) => { this.metric = v; this.render(); }),
      select("usage-by", [["key", "per key"], ["model", "per model"]], this.by, (v) => { this.by = v; this.render(); }),
      h("button", { type: "button", class: "ghost", onclick: () => this.refresh() }, "Refresh"));
  }

  totals() {
    const rows = new Map();
    for (const p of this.series.data) {
      const id = `${p.key_id}\u0000${p.model}`;
      const row = rows.get(id) || { key: p.key_id ? (this.series.keys[p.key_id] || p.key_id) : "(no key)", model: p.model || "—", requests: 0, errors: 0, input: 0, output: 0, cached: 0 };
      row.requests += p.requests; row.errors += p.errors; row.input += p.input_tokens; row.output += p.output_tokens; row.cached += p.cached_tokens;
      rows.set(id, row);
    }
    return h("table", { id: "usage-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "Key"), h("th", {}, "Model"),
        ["Requests", "Errors", "Input", "Output", "Cached"].map((n) => h("th", { class: "num" }, n)))),
      h("tbody", {}, [...rows.values()].map((r) => h("tr", {}, h("td", {}, r.key), h("td", {}, r.model),
        [r.requests, r.errors, r.input, r.output, r.cached].map((v) => h("td", { class: "num" }, number(v)))))));
  }

  render() {
    const { labels, series } = this.chartData();
    const unit = METRICS.find(([m]) => m === this.metric)[1];
    show(this.root, h("section", { class: "card" },
      h("div", { class: "card-head" }, h("h2", {}, "Usage"), h("span", { class: "spacer" }), this.controls()),
      series.length ? [stackedBars(labels, series, unit),
        h("div", { class: "legend" }, series.map((one, k) => h("span", { class: "legend-item" },
          h("span", { class: `swatch c${k % PALETTE.length}` }), one.name)))]
        : h("p", { class: "muted" }, "No requests in this period."),
      h("h3", {}, "Totals in this period"), this.totals()));
  }
}
