// The session's usage charts: tokens per turn, cost per turn with the cumulative cost, and how
// full the context window was at each turn.
"use strict";

import { barChart, short } from "./charts.js";
import { el, money } from "./dom.js";

const percent = (value) => `${+value.toFixed(1)}%`;
const dollars = (value) => (value === 0 ? "$0" : `$${+value.toPrecision(2)}`);

// Folded on a phone (the timeline matters more there); its summary line still gives the totals.
const WIDE = window.matchMedia("(min-width: 761px)");

function summaryLine(turns) {
  const used = turns.reduce((sum, t) => sum + (t.input_tokens || 0) + (t.output_tokens || 0), 0);
  const costs = turns.filter((t) => t.cost !== undefined);
  const cost = costs.length ? ` · ${money(costs.reduce((sum, t) => sum + t.cost, 0))}` : "";
  return `Usage: ${turns.length} turn(s) · ${used.toLocaleString()} tokens${cost}`;
}

export class UsageCharts {
  constructor(fold, box) {
    this.fold = fold; this.box = box; this.turns = []; this.window = null; this.pending = false;
    fold.open = WIDE.matches;
    fold.addEventListener("toggle", () => this.render());
    window.addEventListener("resize", () => this.render());
  }

  reset() { this.turns = []; this.window = null; this.render(); }

  setWindow(tokens) { this.window = tokens || null; this.render(); }

  set(index, usage, cost) {
    this.turns[index] = { ...(this.turns[index] || {}), ...usage };
    if (cost !== undefined && cost !== null) this.turns[index].cost = cost;
    this.render();
  }

  /** Draw once after the current burst of updates (a replayed session sets every turn). */
  render() {
    if (this.pending) return;
    this.pending = true;
    queueMicrotask(() => { this.pending = false; this.draw(); });
  }

  draw() {
    const turns = this.turns.map((turn, i) => ({ ...turn, label: `${i + 1}` }))
      .filter((turn, i) => this.turns[i]);
    this.fold.hidden = turns.length === 0;
    this.fold.querySelector("summary").textContent = summaryLine(turns);
    if (!turns.length || !this.fold.open) { this.box.replaceChildren(); return; }
    const room = this.box.clientWidth || 900;
    const columns = room >= 760 ? 3 : 1;
    const width = Math.max(260, Math.floor(room / columns) - 24);
    this.box.replaceChildren(this.tokens(turns, width), this.cost(turns, width),
      this.fill(turns, width));
  }

  tokens(turns, width) {
    return barChart({
      title: "Tokens per turn", xLabel: "turn", yLabel: "tokens", format: short, width,
      bars: turns.map((turn) => ({ label: turn.label, parts: [
        { value: turn.input_tokens || 0, kind: "in", title: `turn ${turn.label}: `
          + `${(turn.input_tokens || 0).toLocaleString()} input tokens` },
        { value: turn.output_tokens || 0, kind: "out", title: `turn ${turn.label}: `
          + `${(turn.output_tokens || 0).toLocaleString()} output tokens` }] })),
    });
  }

  cost(turns, width) {
    const known = turns.some((turn) => turn.cost !== undefined);
    if (!known) return el("figure", "chart empty", "Cost: the model's price is unknown.");
    let total = 0;
    const cumulative = turns.map((turn) => { total += turn.cost || 0; return total; });
    const chart = barChart({
      title: `Cost per turn and cumulative (${money(total)})`, xLabel: "turn", yLabel: "USD",
      format: dollars, width,
      bars: turns.map((turn) => ({ label: turn.label, parts: [{ value: turn.cost || 0,
        kind: "cost", title: `turn ${turn.label}: ${money(turn.cost || 0)}` }] })),
      line: { values: cumulative, kind: "cumulative", title: "total after turn" },
    });
    chart.classList.add("cost-chart");
    return chart;
  }

  fill(turns, width) {
    if (!this.window) return el("figure", "chart empty", "Context window: size unknown.");
    const used = (turn) => (turn.input_tokens || 0) + (turn.output_tokens || 0);
    const chart = barChart({
      title: `Context-window fill (of ${this.window.toLocaleString()} tokens)`,
      xLabel: "turn", yLabel: "% of window", format: percent, yMax: 100, width,
      bars: turns.map((turn) => ({ label: turn.label, parts: [{
        value: (100 * used(turn)) / this.window, kind: used(turn) > 0.8 * this.window
          ? "fill high" : "fill",
        title: `turn ${turn.label}: ${used(turn).toLocaleString()} tokens, `
          + `${percent((100 * used(turn)) / this.window)} of the window` }] })),
    });
    chart.classList.add("fill-chart");
    return chart;
  }
}
