// A stacked bar chart as inline SVG, drawn from numbers only.

import { number, s } from "./dom.js";

export const PALETTE = ["#2563eb", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#06b6d4", "#ec4899", "#84cc16"];

const W = 880;
const H = 260;
const PAD = { left: 56, right: 12, top: 12, bottom: 28 };

function niceMax(value) {
  if (value <= 0) return 1;
  const step = 10 ** Math.floor(Math.log10(value));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * step >= value) return m * step;
  return 10 * step;
}

function yAxis(max, y) {
  return [0, 0.25, 0.5, 0.75, 1].map((f) => s("g", {},
    s("line", { x1: PAD.left, x2: W - PAD.right, y1: y(max * f), y2: y(max * f), class: "grid" }),
    s("text", { x: PAD.left - 6, y: y(max * f) + 4, "text-anchor": "end", class: "tick" }, number(max * f))));
}

/**
 * labels: one per bucket; series: [{name, values}] with one value per bucket.
 * Returns an <svg>; each bar segment has a <title> naming its series and value.
 */
export function stackedBars(labels, series, unit) {
  const totals = labels.map((_, i) => series.reduce((sum, one) => sum + one.values[i], 0));
  const max = niceMax(Math.max(0, ...totals));
  const plotH = H - PAD.top - PAD.bottom;
  const y = (v) => PAD.top + plotH - (v / max) * plotH;
  const slot = (W - PAD.left - PAD.right) / Math.max(1, labels.length);
  const barW = Math.max(1, slot * 0.72);
  const every = Math.ceil(labels.length / 8);
  const bars = [];
  labels.forEach((label, i) => {
    let base = 0;
    const x = PAD.left + i * slot + (slot - barW) / 2;
    series.forEach((one, k) => {
      const v = one.values[i];
      if (!v) return;
      bars.push(s("rect", { x, width: barW, y: y(base + v), height: y(base) - y(base + v), fill: PALETTE[k % PALETTE.length], class: "seg" },
        s("title", {}, `${label} · ${one.name}: ${number(v)} ${unit}`)));
      base += v;
    });
  });
  const ticks = labels.map((label, i) => (i % every ? null
    : s("text", { x: PAD.left + i * slot + slot / 2, y: H - 8, "text-anchor": "middle", class: "tick" }, label)));
  return s("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img", "aria-label": `${unit} per bucket` },
    yAxis(max, y), bars, ticks,
    s("line", { x1: PAD.left, x2: W - PAD.right, y1: y(0), y2: y(0), class: "axis" }));
}
