// Bar charts with axes (and an optional line over them), drawn as SVG at the size they are
// shown, so the labels stay readable on a phone. No library: this is all the page needs.
"use strict";

const NS = "http://www.w3.org/2000/svg";
const HEIGHT = 170;
const MARGIN = { left: 54, right: 10, top: 12, bottom: 34 };

function svgNode(tag, attributes = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Round tick values covering 0..most: [0, step, 2·step, …], about four of them (whole
 * numbers only when `integer`: counts). */
export function ticks(most, integer = false) {
  if (!(most > 0)) return [0, 1];
  const rough = most / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  const nice = [1, 2, 2.5, 5, 10].map((k) => k * power).find((s) => s >= rough);
  const step = integer ? Math.max(1, Math.ceil(nice)) : nice;
  const out = [];
  for (let value = 0; value < most + step * 0.999; value += step) out.push(value);
  return out;
}

/**
 * A chart in a <figure>: `bars` is [{label, parts: [{value, kind, title}]}] (parts stacked),
 * `line` optionally {values, kind, title} drawn over the bars on the same axis.
 * `format` writes a y value; `xLabel` and `yLabel` name the axes; `yMax` fixes the top;
 * `integer` keeps the y ticks whole (counts).
 */
export function barChart({ title, bars, line = null, format = String, xLabel, yLabel,
  yMax = null, integer = false, width = 320 }) {
  const figure = document.createElement("figure");
  figure.className = "chart";
  const caption = document.createElement("figcaption");
  caption.textContent = title;
  figure.appendChild(caption);
  const sums = bars.map((bar) => bar.parts.reduce((sum, part) => sum + (part.value || 0), 0));
  const most = yMax !== null ? yMax : Math.max(0, ...sums, ...(line ? line.values : []));
  const scale = ticks(most, integer);
  const top = scale[scale.length - 1];
  const plotW = width - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const y = (value) => MARGIN.top + plotH - (plotH * Math.min(value, top)) / top;
  const slot = plotW / Math.max(bars.length, 1);
  const svg = svgNode("svg", { width, height: HEIGHT, viewBox: `0 0 ${width} ${HEIGHT}`,
    role: "img", "aria-label": title });
  for (const value of scale) {  // the y axis: grid lines and labels
    svg.appendChild(svgNode("line", { x1: MARGIN.left, x2: width - MARGIN.right, y1: y(value),
      y2: y(value), class: value === 0 ? "axis" : "grid" }));
    svg.appendChild(svgNode("text", { x: MARGIN.left - 4, y: y(value) + 3, class: "tick y" },
      format(value)));
  }
  svg.appendChild(svgNode("line", { x1: MARGIN.left, x2: MARGIN.left, y1: MARGIN.top,
    y2: MARGIN.top + plotH, class: "axis" }));
  const every = Math.ceil(bars.length / Math.max(1, Math.floor(plotW / 28)));
  bars.forEach((bar, i) => {
    const x = MARGIN.left + i * slot;
    let base = 0;
    for (const part of bar.parts) {
      const value = part.value || 0;
      const rect = svgNode("rect", { x: x + slot * 0.15, width: Math.max(slot * 0.7, 1),
        y: y(base + value), height: Math.max(y(base) - y(base + value), value ? 0.5 : 0),
        class: `bar ${part.kind || ""}` });
      rect.appendChild(svgNode("title", {}, part.title || `${bar.label}: ${format(value)}`));
      svg.appendChild(rect);
      base += value;
    }
    if (i % every === 0) {
      svg.appendChild(svgNode("text", { x: x + slot / 2, y: MARGIN.top + plotH + 13,
        class: "tick x" }, bar.label));
    }
  });
  if (line && line.values.length) {
    const points = line.values.map((value, i) => `${MARGIN.left + (i + 0.5) * slot},${y(value)}`);
    svg.appendChild(svgNode("polyline", { points: points.join(" "), class: `line ${line.kind}` }));
    line.values.forEach((value, i) => {
      const dot = svgNode("circle", { cx: MARGIN.left + (i + 0.5) * slot, cy: y(value), r: 2.5,
        class: `dot ${line.kind}` });
      dot.appendChild(svgNode("title", {}, `${line.title} ${bars[i] ? bars[i].label : i + 1}: `
        + format(value)));
      svg.appendChild(dot);
    });
  }
  svg.appendChild(svgNode("text", { x: MARGIN.left + plotW / 2, y: HEIGHT - 4,
    class: "axis-label" }, xLabel));
  svg.appendChild(svgNode("text", { x: 10, y: MARGIN.top + plotH / 2, class: "axis-label",
    transform: `rotate(-90 10 ${MARGIN.top + plotH / 2})` }, yLabel));
  figure.appendChild(svg);
  return figure;
}

/** A short number: 1234 → "1.2k", 0.0042 → "0.0042". */
export function short(value) {
  if (value >= 1e6) return `${+(value / 1e6).toFixed(1)}M`;
  if (value >= 1e3) return `${+(value / 1e3).toFixed(1)}k`;
  return `${+value.toPrecision(3)}`;
}
