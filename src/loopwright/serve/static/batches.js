// The batch view: one `loopwright batch` run's results — solved share, a histogram of turns, the
// reasons tasks failed, and a table of every task (a row with a session opens it).
"use strict";

import { barChart } from "./charts.js";
import { el, money } from "./dom.js";

const percent = (part, whole) => (whole ? `${((100 * part) / whole).toFixed(1)} %` : "—");

/** Why a task did not succeed, in one line (empty for a solved task). */
export function failureReason(row) {
  if (row.solved) return "";
  if (row.error) return row.error;
  if (row.verdict && row.verdict.passed === false) {
    return row.verdict.detail || `the ${row.verdict.checker || "check"} failed`;
  }
  if (row.stop_reason && row.stop_reason !== "completed") return `stopped: ${row.stop_reason}`;
  return "";
}

function verdictText(verdict) {
  if (!verdict || verdict.passed === null || verdict.passed === undefined) return "unchecked";
  return `${verdict.passed ? "passed" : "failed"}${verdict.checker ? ` (${verdict.checker})` : ""}`;
}

function headline(detail) {
  const s = detail.summary;
  const box = el("div", "batch-head");
  box.append(el("h2", "", `Batch ${detail.name}`),
    el("div", "solved-share", `${s.solved} of ${s.tasks} solved (${percent(s.solved, s.tasks)})`));
  const facts = [`${s.checked} checked`, `${s.failed} failed to run`, `${s.invalid} invalid`,
    `cost ${s.cost === null ? "unknown" : money(s.cost)}`,
    `stop reasons: ${Object.entries(s.by_stop_reason).map(([k, n]) => `${k} ${n}`).join(", ")}`];
  box.appendChild(el("div", "dim", facts.join(" · ")));
  return box;
}

function histogram(rows, width) {
  const counts = new Map();
  for (const row of rows.filter((r) => r.status !== "invalid")) {
    counts.set(row.turns, (counts.get(row.turns) || 0) + 1);
  }
  const most = Math.max(0, ...counts.keys());
  const bars = [];
  for (let turns = 0; turns <= most; turns += 1) {
    const n = counts.get(turns) || 0;
    bars.push({ label: `${turns}`, parts: [{ value: n, kind: "turns",
      title: `${n} task(s) took ${turns} turn(s)` }] });
  }
  const chart = barChart({ title: "Turns per task", xLabel: "turns", yLabel: "tasks",
    format: String, integer: true, bars, width });
  chart.classList.add("turns-histogram");
  return chart;
}

function reasons(rows) {
  const counted = new Map();
  for (const row of rows) {
    const reason = failureReason(row);
    if (reason) counted.set(reason, (counted.get(reason) || 0) + 1);
  }
  const box = el("div", "failure-reasons");
  box.appendChild(el("h3", "", "Failure reasons"));
  const list = el("ul");
  for (const [reason, n] of [...counted].sort((a, b) => b[1] - a[1])) {
    const item = el("li");
    item.append(el("span", "count", `${n}×`), el("span", "", ` ${reason}`));
    list.appendChild(item);
  }
  if (!counted.size) list.appendChild(el("li", "dim", "None."));
  box.appendChild(list);
  return box;
}

function table(rows, openSession) {
  const wrap = el("div", "table-wrap");
  const grid = el("table", "batch-table");
  const head = el("tr");
  for (const name of ["task", "status", "verdict", "turns", "cost", "failure reason"]) {
    head.appendChild(el("th", "", name));
  }
  grid.appendChild(el("thead")).appendChild(head);
  const body = grid.appendChild(el("tbody"));
  for (const row of rows) {
    const line = el("tr", row.solved ? "solved" : "unsolved");
    const task = el("td", "task", row.id === null ? `line ${row.line}` : row.id);
    line.append(task, el("td", `status ${row.status}`, row.status),
      el("td", "verdict", verdictText(row.verdict)), el("td", "num", `${row.turns}`),
      el("td", "num", row.cost === null ? "" : money(row.cost)),
      el("td", "reason", failureReason(row)));
    if (row.session_id) {
      line.classList.add("link");
      line.title = "open this task's session";
      line.addEventListener("click", () => openSession(row.session_id));
    }
    body.appendChild(line);
  }
  wrap.appendChild(grid);
  return wrap;
}

/** Fill `box` with the batch `detail` (GET /batches/{n}). */
export function showBatch(box, detail, openSession) {
  const width = Math.max(260, Math.min(box.clientWidth || 600, 720) - 24);
  box.replaceChildren(headline(detail), histogram(detail.rows, width), reasons(detail.rows),
    table(detail.rows, openSession));
}
