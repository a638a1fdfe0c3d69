// The timeline of a session: prompts, runs, turns, tool calls, sub-agents, approvals, and what
// the agent is doing right now — all from the run's event stream (or the stored events).
"use strict";

import { api, el, money, pretty, showError, tokens } from "./dom.js";
import { MarkdownStream } from "./markdown.js";

const RETRY_KINDS = new Set(["retrying", "rate_limit", "overloaded", "stream_error", "cut_stream",
  "stall", "disconnect", "history_repaired", "fallback", "discard_partial"]);
// after these the model call's reply is sent again from its start (a fallback model's, or a
// retry's that differs from what broke off): the broken one's text is taken back (the same list
// as REPLY_ANEW in events.py)
const REPLY_ANEW_KINDS = new Set(["fallback", "discard_partial"]);
const COMPACTION_KINDS = new Set(["compacting", "compacted", "pruned", "context_trimmed"]);
const SILENT_KINDS = new Set(["session_id", "approval_expired"]);

// --- one agent's part of the timeline (the run itself, or a sub-agent nested in it) -----------

class AgentView {
  constructor(container, timeline, tag) {
    this.container = container; this.timeline = timeline; this.tag = tag;
    this.turn = null; this.tools = new Map();
  }

  turnBody() {
    if (!this.turn) this.startTurn({ turn: "…" });
    return this.turn;
  }

  startTurn(event) {
    this.timeline.settleStart();
    const box = el("div", "turn");
    const head = el("div", "head");
    const activity = el("span", "activity");
    activity.setAttribute("role", "status");  // read out as it changes
    head.append(el("strong", "", `Turn ${event.turn}`), activity,
      el("span", "meta"));
    const body = el("div", "body");
    const reasoning = el("details", "reasoning-box");
    reasoning.hidden = true;
    reasoning.append(el("summary", "dim", "reasoning"), el("div", "reasoning"));
    const text = el("div", "text markdown");
    body.append(reasoning, text, el("div", "tools"), el("div", "notes"));
    box.append(head, body);
    this.container.appendChild(box);
    // times come from the server's events; a replayed stored turn's words carry none
    this.turn = { box, head, body, started: event.created || performance.now() / 1000,
      timed: Boolean(event.created), firstToken: null, text: new MarkdownStream(text),
      running: 0 };
    this.activity("waiting for the model");
  }

  part(selector) { return this.turnBody().body.querySelector(selector); }

  /** What the agent is doing now, in its turn's head (null: nothing, the turn is over). */
  activity(doing) {
    const shown = this.turnBody().head.querySelector(".activity");
    if (shown.dataset.doing === (doing || "")) return;  // its clock keeps running
    shown.dataset.since = performance.now();
    shown.dataset.doing = doing || "";
    shown.textContent = doing || "";
    shown.classList.toggle("busy", Boolean(doing));
  }

  markFirstToken(event) {
    const turn = this.turnBody();
    if (turn.firstToken !== null || turn.timed !== Boolean(event.created)) return;
    turn.firstToken = event.created || performance.now() / 1000;
  }

  add(event) {
    switch (event.type) {
      case "turn_start": this.startTurn(event); break;
      case "text_delta":
        this.markFirstToken(event);
        this.turnBody().text.append(event.text);
        this.activity("writing");
        break;
      case "reasoning_delta":
        this.markFirstToken(event);
        this.part(".reasoning-box").hidden = false;
        this.part(".reasoning").textContent += event.text;
        this.activity("thinking");
        break;
      case "tool_call": this.markFirstToken(event); this.toolCall(event); break;
      case "tool_result": this.toolResult(event); break;
      case "status": this.status(event); break;
      case "review": this.review(event); break;
      case "model_call": this.modelCall(event.record || {}); break;
      case "turn_end": this.endTurn(event); break;
      default: this.timeline.ended(event, this);
    }
  }

  toolCall(event) {
    const box = el("div", "tool");
    const head = el("div");
    head.append(el("span", "name", event.name), el("span", "state", "running…"));
    box.append(head, el("pre", "args", pretty(event.arguments)));
    box.dataset.callId = event.id;
    this.part(".tools").appendChild(box);
    this.tools.set(event.id, box);
    this.turnBody().running += 1;
    this.activity(`running ${event.name}`);
  }

  toolResult(event) {
    const box = this.tools.get(event.id) || (this.toolCall({ ...event, arguments: "" }),
      this.tools.get(event.id));
    const denied = event.data && event.data.denied;
    box.classList.toggle("error", Boolean(event.is_error));
    box.querySelector(".state").textContent =
      `${denied ? "denied" : event.is_error ? "failed" : "done"} in ${(event.duration || 0).toFixed(2)} s`;
    const shown = event.content !== undefined ? event.content : event.preview || "";
    box.appendChild(el("pre", "result", shown));
    const turn = this.turnBody();
    turn.running = Math.max(0, turn.running - 1);
    if (!turn.running) this.activity("tools done");
  }

  status(event) {
    const kind = event.kind;
    if (kind === "approval_required") {
      this.timeline.approvalCard(event, this);
      this.activity("waiting for your approval");
      return;
    }
    if (kind === "approval") this.timeline.approvalAnswered(event);
    if (kind === "approval_expired") this.timeline.approvalExpired(event);
    if (kind === "compacting") this.activity("compacting the context");
    if (kind === "turn_diff" && event.data && event.data.diff) {
      const pre = el("pre", "diff");
      for (const line of event.data.diff.split("\n")) {
        const cls = line.startsWith("+") && !line.startsWith("+++") ? "add"
          : line.startsWith("-") && !line.startsWith("---") ? "del" : "";
        pre.appendChild(el("span", cls, `${line}\n`));
      }
      this.part(".notes").append(el("div", "note", event.message), pre);
      return;
    }
    if (REPLY_ANEW_KINDS.has(kind) && this.turn) this.turn.text.reset();
    if (SILENT_KINDS.has(kind)) return;
    const cls = RETRY_KINDS.has(kind) ? "note retry"
      : COMPACTION_KINDS.has(kind) ? "note compaction" : "note";
    this.part(".notes").appendChild(el("div", cls, `${kind}: ${event.message}`));
  }

  review(event) {  // a check of the answer: its verdict, why, and how many reviews are left
    const text = [`review ${event.check || ""}: ${event.verdict || ""}`.trim()];
    if (event.reason) text.push(event.reason);
    const left = event.budget_left !== undefined ? event.budget_left : event.budget;
    if (left !== undefined && left !== null) text.push(`${left} left`);
    const note = el("div", `note review ${String(event.verdict || "").replace(/\W/g, "")}`,
      text.join(" — "));
    this.part(".notes").appendChild(note);
  }

  modelCall(record) {  // latency, cost and attempts of each model call
    const turn = this.turnBody();
    turn.calls = [...(turn.calls || []), record];
    const seconds = `${(record.latency || 0).toFixed(2)} s`;
    if (record.purpose && record.purpose !== "turn") {
      const cls = record.purpose === "compaction" ? "note compaction" : "note";
      this.part(".notes").appendChild(el("div", cls,
        `${record.purpose} call to ${record.model}: ${seconds} ${money(record.cost)}`));
    }
    if ((record.attempts || 1) > 1) {
      this.part(".notes").appendChild(el("div", "note retry",
        `model call needed ${record.attempts} attempts (${seconds})`));
    }
    if (record.error) this.part(".notes").appendChild(el("div", "note", `model call failed: ${record.error}`));
  }

  endTurn(event) {
    const turn = this.turnBody();
    turn.text.flush();
    this.activity(null);
    const usage = event.usage || {};
    const now = event.created || performance.now() / 1000;
    const latency = turn.firstToken !== null ? turn.firstToken - turn.started : null;
    const parts = [`${tokens(usage.input_tokens)} in`, `${tokens(usage.output_tokens)} out`];
    if (usage.reasoning_tokens) parts.push(`${tokens(usage.reasoning_tokens)} reasoning`);
    const calls = (turn.calls || []).filter((c) => !c.purpose || c.purpose === "turn");
    if (calls.length) {
      parts.push(`model ${calls.reduce((sum, c) => sum + (c.latency || 0), 0).toFixed(2)} s`);
    }
    if (latency !== null) parts.push(`first token ${latency.toFixed(2)} s`);
    parts.push(`turn ${(now - turn.started).toFixed(2)} s`);
    turn.head.querySelector(".meta").textContent = parts.join(" · ");
    const costs = calls.map((c) => c.cost).filter((c) => typeof c === "number");
    const cost = typeof event.cost === "number" ? event.cost
      : costs.length ? costs.reduce((a, b) => a + b, 0) : undefined;
    if (cost !== undefined) turn.head.appendChild(el("span", "cost dim", money(cost)));
    turn.box.dataset.turn = event.turn;
    if (!this.tag) this.timeline.turnUsage(usage, turn, cost);
    this.turn = null;
  }

  settle() {  // the run is over: no turn of it is still doing anything
    if (this.turn) { this.turn.text.flush(); this.activity(null); }
  }
}

// How long each busy activity has gone on, once a second: a clock on the page, no request.
setInterval(() => {
  for (const shown of document.querySelectorAll(".turn .activity.busy")) {
    const seconds = Math.floor((performance.now() - Number(shown.dataset.since)) / 1000);
    if (seconds >= 1) shown.textContent = `${shown.dataset.doing} · ${seconds} s`;
  }
}, 1000);

// --- approval cards, worded by their state ---------------------------------------------------

const CARD_WORDS = {
  allowed: (data) => `Allowed: ${data.reason || "approved"}.`,
  denied: (data) => `Denied: ${data.reason || "declined"}.`,
  expired: (data) => `Expired: ${data.reason || "no one answered"}; the call was denied.`,
};

function setCardState(card, state, data) {
  if (card.dataset.state === "expired") return;  // its later "denied" says nothing new
  card.dataset.state = state;
  card.classList.add("answered", state);
  card.querySelector(".state-line").textContent = CARD_WORDS[state](data);
  card.querySelector(".buttons").replaceChildren();
}

// --- the timeline -----------------------------------------------------------------------------

export class Timeline {
  constructor(box, chart) {
    this.box = box; this.chart = chart; this.views = new Map(); this.cards = new Map();
    this.turnHeads = []; this.runId = null; this.starting = null;
  }

  clear() {
    this.box.replaceChildren(); this.views.clear(); this.cards.clear(); this.turnHeads = [];
    this.starting = null;
    this.chart.reset();
  }

  prompt(text) {
    if (text) this.box.appendChild(el("div", "prompt", text));
    this.views.clear();  // a new run: its turns start a new group
  }

  /** A run was started and nothing came from it yet. */
  waiting() {
    this.starting = el("div", "activity busy run-start", "starting the run");
    this.box.appendChild(this.starting);
  }

  settleStart() {
    if (this.starting) this.starting.remove();
    this.starting = null;
  }

  view(tag) {
    if (!this.views.has(tag)) {
      let container = this.box;
      if (tag) {
        const parent = this.view(tag.includes("/") ? tag.slice(0, tag.lastIndexOf("/")) : "");
        const nest = el("details", "subagent");
        nest.open = true;
        nest.append(el("summary", "", `sub-agent ${tag}`));
        parent.turnBody().body.querySelector(".tools").appendChild(nest);
        container = nest;
      }
      this.views.set(tag, new AgentView(container, this, tag));
    }
    return this.views.get(tag);
  }

  add(event) { this.view(event.agent || "").add(event); }

  turnUsage(usage, turn, cost) {
    this.turnHeads.push(turn.head);
    this.chart.set(this.turnHeads.length - 1, usage, cost);
  }

  costs(turnRecords) {  // per-turn cost from the store (sub-agents' calls included), in order
    turnRecords.forEach((record, i) => {
      this.chart.set(i, {}, record.cost);
      const head = this.turnHeads[i];
      if (!head || typeof record.cost !== "number") return;
      const shown = head.querySelector(".cost") || head.appendChild(el("span", "cost dim"));
      shown.textContent = money(record.cost);
    });
  }

  approvalCard(event, view) {
    const data = event.data || {};
    const card = el("div", "approval pending");
    card.dataset.callId = data.call_id;
    card.dataset.state = "pending";
    card.append(el("div", "", `Approval needed: ${data.action}`), el("pre", "", data.detail),
      el("div", "dim state-line",
        `Waiting for your answer; denied if none comes within ${data.timeout} s.`));
    const buttons = el("div", "buttons");
    for (const decision of ["allow", "deny", "always"]) {
      const button = el("button", decision === "deny" ? "danger" : "", decision);
      button.dataset.decision = decision;
      button.addEventListener("click", () => this.answer(card, data.call_id, decision));
      buttons.appendChild(button);
    }
    card.appendChild(buttons);
    const tool = view.tools.get(data.call_id);
    (tool || view.part(".notes")).appendChild(card);
    this.cards.set(data.call_id, card);
  }

  async answer(card, callId, decision) {
    card.querySelectorAll("button").forEach((b) => { b.disabled = true; });
    try {
      // the id in the body: a URL's path would drop "." and ".." (and "%2e") as dot segments
      await api(`/runs/${encodeURIComponent(this.runId)}/approvals`,
        { method: "POST", body: { call_id: callId, decision } });
    } catch (error) {
      showError(error);
      card.querySelectorAll("button").forEach((b) => { b.disabled = false; });
    }
  }

  approvalAnswered(event) {
    const data = event.data || {};
    const card = this.cards.get(data.call_id);
    if (card) setCardState(card, data.allowed ? "allowed" : "denied", data);
  }

  approvalExpired(event) {
    const data = event.data || {};
    const card = this.cards.get(data.call_id);
    if (card) setCardState(card, "expired", data);
  }

  ended(event, view) {
    view.settle();
    if (view.tag) {
      view.container.querySelector("summary").textContent += ` — ${event.type}`;
      return;
    }
    this.settleStart();
    for (const card of this.cards.values()) {  // a question the run never had answered
      if (card.dataset.state === "pending") {
        setCardState(card, "expired", { reason: "the run ended before an answer" });
      }
    }
    const reason = event.result ? event.result.stop_reason : event.type;
    const line = el("div", `run-state ${reason}`, `Run ${reason}`);
    if (event.message) line.textContent += `: ${event.message}`;
    if (event.result && typeof event.result.cost === "number") {
      line.textContent += ` · ${money(event.result.cost)}`;
    }
    this.box.appendChild(line);
  }
}

// A stored session as the events it produced: the store keeps every event but the text and
// reasoning deltas. Each top-level turn_end row carries its turn's own words (the prompt or
// steering it began with, its text and reasoning), so they land under the right turn even when
// the session was steered or compacted. Sessions recorded before that have only the messages:
// each top-level turn wrote one assistant message, and each run started from one user message.
// `skipRun`: a run still live, whose own event stream (with its text) replays it instead.
export function replayStored(timeline, detail, { skipRun = null } = {}) {
  const ends = new Map(detail.events.filter((e) => e.type === "turn_end" && !e.agent
    && typeof e.text === "string").map((e) => [`${e.run_id}/${e.turn}`, e]));
  const assistants = detail.messages.filter((m) => m.role === "assistant");
  const users = detail.messages.filter((m) => m.role === "user");
  const results = new Map(detail.messages.filter((m) => m.role === "tool")
    .map((m) => [m.tool_call_id, m.content]));
  let run = null;
  for (const event of detail.events) {
    if (event.run_id === skipRun) continue;  // a live run: its own stream replays it whole
    const end = ends.get(`${event.run_id}/${event.turn}`);
    if (event.run_id !== run) {
      run = event.run_id;
      const first = ends.get(`${run}/1`);
      const user = first ? { content: (first.user || [])[0] || "" } : users.shift();
      timeline.prompt(user ? user.content : "");
    }
    if (event.type === "turn_start" && !event.agent && end && event.turn > 1) {
      for (const said of end.user || []) {
        timeline.box.appendChild(el("div", "note", `steered: ${said}`));
      }
    }
    if (event.type === "turn_end" && !event.agent) {
      const message = end ? { content: end.text, reasoning: end.reasoning }
        : assistants.shift();
      if (message && message.reasoning) {
        timeline.add({ type: "reasoning_delta", text: message.reasoning });
      }
      if (message && message.content) timeline.add({ type: "text_delta", text: message.content });
    }
    if (event.type === "tool_result" && !event.agent && results.has(event.id)) {
      event.content = results.get(event.id);
    }
    timeline.add(event);
  }
}
