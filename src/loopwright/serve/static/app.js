// loopwright serve — the web page. Plain JavaScript, no build step.
// Everything the model or a tool wrote goes into the page as text (textContent), never as HTML.
"use strict";

const TOKEN = document.querySelector('meta[name="loopwright-token"]').content;
const RETRY_KINDS = new Set(["retrying", "rate_limit", "overloaded", "stream_error", "cut_stream",
  "stall", "disconnect", "history_repaired"]);
const COMPACTION_KINDS = new Set(["compacting", "compacted", "pruned", "context_trimmed"]);
const $ = (id) => document.getElementById(id);

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

async function api(path, options = {}) {
  const headers = { authorization: `Bearer ${TOKEN}` };
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, {
    method: options.method || "GET", headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
  return data;
}

function showError(error) {
  const box = $("error");
  box.hidden = !error;
  box.textContent = error ? String(error.message || error) : "";
}

const when = (seconds) => new Date(seconds * 1000).toLocaleString();
const tokens = (n) => (n || 0).toLocaleString();
const money = (usd) => (usd === null || usd === undefined ? "" : `$${usd.toFixed(4)}`);
const pretty = (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2));

// --- the usage chart: input and output tokens per turn, cost on top when known ---------------

class UsageChart {
  constructor(box) { this.box = box; this.turns = []; }

  reset() { this.turns = []; this.render(); }

  set(index, usage, cost) {
    this.turns[index] = { ...(this.turns[index] || {}), ...usage };
    if (cost !== undefined && cost !== null) this.turns[index].cost = cost;
    this.render();
  }

  render() {
    const turns = this.turns.filter(Boolean);
    this.box.hidden = turns.length === 0;
    this.box.replaceChildren();
    if (!turns.length) return;
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    const width = 600, height = 140, bottom = 20, top = 14;
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("preserveAspectRatio", "xMinYMid meet");
    const most = Math.max(1, ...turns.map((t) => (t.input_tokens || 0) + (t.output_tokens || 0)));
    const slot = width / Math.max(turns.length, 8);
    const scale = (n) => ((height - bottom - top) * n) / most;
    turns.forEach((turn, i) => {
      const x = i * slot + slot * 0.15, w = slot * 0.7;
      const inH = scale(turn.input_tokens || 0), outH = scale(turn.output_tokens || 0);
      const bar = (cls, y, h, label) => {
        const rect = document.createElementNS(ns, "rect");
        Object.entries({ x, y, width: w, height: Math.max(h, 0.5), class: cls })
          .forEach(([k, v]) => rect.setAttribute(k, v));
        const title = document.createElementNS(ns, "title");
        title.textContent = label;
        rect.appendChild(title);
        svg.appendChild(rect);
      };
      bar("in", height - bottom - inH, inH, `turn ${i + 1}: ${tokens(turn.input_tokens)} in`);
      bar("out", height - bottom - inH - outH, outH,
        `turn ${i + 1}: ${tokens(turn.output_tokens)} out`);
      const label = (y, text) => {
        const node = document.createElementNS(ns, "text");
        node.setAttribute("x", x); node.setAttribute("y", y); node.textContent = text;
        svg.appendChild(node);
      };
      label(height - 6, `${i + 1}`);
      if (turn.cost !== undefined) label(height - bottom - inH - outH - 3, money(turn.cost));
    });
    this.box.append(el("div", "dim", "Tokens per turn (light: input, dark: output) and cost"), svg);
  }
}

// --- one agent's part of the timeline (the run itself, or a sub-agent nested in it) -----------

class AgentView {
  constructor(container, timeline, tag) {
    this.container = container; this.timeline = timeline; this.tag = tag;
    this.turn = null; this.tools = new Map(); this.turnIndex = 0;
  }

  turnBody() {
    if (!this.turn) this.startTurn({ turn: "…" });
    return this.turn;
  }

  startTurn(event) {
    const box = el("div", "turn");
    const head = el("div", "head");
    head.append(el("strong", "", `Turn ${event.turn}`), el("span", "meta"));
    const body = el("div", "body");
    const reasoning = el("details", "reasoning-box");
    reasoning.hidden = true;
    reasoning.append(el("summary", "dim", "reasoning"), el("div", "reasoning"));
    body.append(reasoning, el("div", "text"), el("div", "tools"), el("div", "notes"));
    box.append(head, body);
    this.container.appendChild(box);
    this.turn = { box, head, body, started: event.created || performance.now() / 1000,
      firstToken: null };
  }

  part(selector) { return this.turnBody().body.querySelector(selector); }

  markFirstToken(event) {
    const turn = this.turnBody();
    if (turn.firstToken === null) turn.firstToken = event.created || performance.now() / 1000;
  }

  add(event) {
    switch (event.type) {
      case "turn_start": this.startTurn(event); break;
      case "text_delta":
        this.markFirstToken(event);
        this.part(".text").textContent += event.text;
        break;
      case "reasoning_delta":
        this.markFirstToken(event);
        this.part(".reasoning-box").hidden = false;
        this.part(".reasoning").textContent += event.text;
        break;
      case "tool_call": this.markFirstToken(event); this.toolCall(event); break;
      case "tool_result": this.toolResult(event); break;
      case "status": this.status(event); break;
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
  }

  status(event) {
    const kind = event.kind;
    if (kind === "approval_required") { this.timeline.approvalCard(event, this); return; }
    if (kind === "approval") { this.timeline.approvalAnswered(event); }
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
    if (kind === "session_id") return;
    const cls = RETRY_KINDS.has(kind) ? "note retry"
      : COMPACTION_KINDS.has(kind) ? "note compaction" : "note";
    this.part(".notes").appendChild(el("div", cls, `${kind}: ${event.message}`));
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
    const costs = calls.map((c) => c.cost).filter((c) => c !== null && c !== undefined);
    const cost = costs.length ? costs.reduce((a, b) => a + b, 0) : undefined;
    if (cost !== undefined) turn.head.appendChild(el("span", "cost dim", money(cost)));
    turn.box.dataset.turn = event.turn;
    if (!this.tag) this.timeline.turnUsage(event.turn, usage, turn, cost);
    this.turn = null;
  }
}

// --- the timeline of a session: prompts, runs, turns, sub-agents, approvals ------------------

class Timeline {
  constructor(box, chart) {
    this.box = box; this.chart = chart; this.views = new Map(); this.cards = new Map();
    this.turnHeads = []; this.runId = null;
  }

  clear() {
    this.box.replaceChildren(); this.views.clear(); this.cards.clear(); this.turnHeads = [];
    this.chart.reset();
  }

  prompt(text) {
    if (text) this.box.appendChild(el("div", "prompt", text));
    this.views.clear();  // a new run: its turns start a new group
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

  turnUsage(turn, usage, view, cost) {
    this.turnHeads.push(view.head);
    this.chart.set(this.turnHeads.length - 1, usage, cost);
  }

  costs(turnRecords) {  // per-turn cost from the store (sub-agents' calls included), in order
    turnRecords.forEach((record, i) => {
      this.chart.set(i, {}, record.cost);
      const head = this.turnHeads[i];
      if (!head || record.cost === null || record.cost === undefined) return;
      const shown = head.querySelector(".cost") || head.appendChild(el("span", "cost dim"));
      shown.textContent = money(record.cost);
    });
  }

  approvalCard(event, view) {
    const data = event.data || {};
    const card = el("div", "approval");
    card.dataset.callId = data.call_id;
    card.append(el("div", "", `Approval needed: ${data.action}`), el("pre", "", data.detail),
      el("div", "dim", `Denied after ${data.timeout} s without an answer.`));
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
      await api(`/runs/${this.runId}/approvals/${encodeURIComponent(callId)}`,
        { method: "POST", body: { decision } });
    } catch (error) {
      showError(error);
      card.querySelectorAll("button").forEach((b) => { b.disabled = false; });
    }
  }

  approvalAnswered(event) {
    const data = event.data || {};
    const card = this.cards.get(data.call_id);
    if (!card) return;
    card.classList.add("answered");
    card.querySelector(".buttons").replaceChildren(
      el("span", "", `${data.allowed ? "allowed" : "denied"}: ${data.reason}`));
  }

  ended(event, view) {
    if (view.tag) {
      view.container.querySelector("summary").textContent += ` — ${event.type}`;
      return;
    }
    const reason = event.result ? event.result.stop_reason : event.type;
    const line = el("div", `run-state ${reason}`, `Run ${reason}`);
    if (event.message) line.textContent += `: ${event.message}`;
    if (event.result && event.result.cost !== null && event.result.cost !== undefined) {
      line.textContent += ` · ${money(event.result.cost)}`;
    }
    this.box.appendChild(line);
  }
}

// --- the page: sessions, live runs, starting and watching runs -------------------------------

const page = {
  sessionId: null, stream: null, runId: null,
  timeline: new Timeline($("timeline"), new UsageChart($("usage"))),

  async loadSessions() {
    const q = $("search").value.trim();
    const found = await api(`/sessions?limit=50${q ? `&q=${encodeURIComponent(q)}` : ""}`);
    const list = $("sessions");
    list.replaceChildren();
    for (const session of found.sessions) {
      if (session.parent_id && !q) continue;  // sub-agents show inside their parent's timeline
      const item = el("li", `session${session.id === this.sessionId ? " open" : ""}`);
      item.dataset.id = session.id;
      item.append(el("span", "title", session.title || session.id),
        el("span", "meta", `${session.model} · ${when(session.updated)} · ${session.runs} run(s)`
          + ` · ${session.stop_reason || ""} ${money(session.cost)}`));
      if (session.snippet) item.appendChild(el("span", "snippet", session.snippet));
      item.addEventListener("click", () => this.openSession(session.id).catch(showError));
      list.appendChild(item);
    }
    if (!found.sessions.length) list.appendChild(el("li", "dim", q ? "No match." : "None yet."));
  },

  async loadRuns() {
    const [{ runs }, health] = await Promise.all([api("/runs"), api("/health")]);
    $("health").textContent = `v${health.version} · ${health.live_runs} live run(s)`;
    const list = $("runs");
    list.replaceChildren();
    for (const run of runs.filter((r) => !r.finished)) {
      const item = el("li", "run", `${run.id} · ${run.model || ""}`);
      item.dataset.id = run.id;
      item.addEventListener("click", () => this.openSession(run.session_id).catch(showError));
      list.appendChild(item);
    }
    if (!list.children.length) list.appendChild(el("li", "dim", "None."));
  },

  async openSession(id) {
    const detail = await api(`/sessions/${encodeURIComponent(id)}`);
    this.stop();
    this.sessionId = detail.session.id;
    $("session-title").textContent =
      `Session ${detail.session.id.slice(0, 8)} — ${detail.session.title || ""}`;
    this.timeline.clear();
    replayStored(this.timeline, detail);
    this.timeline.costs(detail.turns);
    this.markOpen();
    if (detail.live_run) this.watch(detail.live_run);
  },

  markOpen() {
    document.querySelectorAll("#sessions li").forEach((li) => {
      li.classList.toggle("open", li.dataset.id === this.sessionId);
    });
  },

  newSession() {
    this.stop();
    this.sessionId = null;
    $("session-title").textContent = "New session";
    this.timeline.clear();
    this.markOpen();
  },

  async start() {
    const prompt = $("prompt").value;
    if (!prompt.trim()) return;
    const body = { prompt };
    if (this.sessionId) body.session_id = this.sessionId;
    if ($("model").value.trim()) body.model = $("model").value.trim();
    showError(null);
    $("start").disabled = true;
    try {
      const started = await api("/runs", { method: "POST", body });
      $("prompt").value = "";
      if (!this.sessionId) this.timeline.clear();
      this.sessionId = started.session_id;
      $("session-title").textContent = `Session ${started.session_id.slice(0, 8)}`;
      this.timeline.prompt(prompt);
      this.watch(started.run_id);
    } finally {
      $("start").disabled = false;
    }
  },

  watch(runId) {
    this.stop();
    this.runId = runId;
    this.timeline.runId = runId;
    $("controls").hidden = false;
    const stream = new EventSource(`/runs/${encodeURIComponent(runId)}/events`);
    this.stream = stream;
    stream.onmessage = (message) => {
      const event = JSON.parse(message.data);
      this.timeline.add(event);
      if (!event.agent && ["done", "error", "cancelled"].includes(event.type)) {
        this.finished();
      }
    };
  },

  async finished() {
    this.stop();
    this.loadSessions().catch(showError);
    this.loadRuns().catch(showError);
    if (this.sessionId) {
      const detail = await api(`/sessions/${encodeURIComponent(this.sessionId)}`).catch(() => null);
      if (detail) this.timeline.costs(detail.turns);
    }
  },

  stop() {
    if (this.stream) this.stream.close();
    this.stream = null;
    $("controls").hidden = true;
  },

  async steer() {
    const text = $("steer-text").value;
    if (!text.trim() || !this.runId) return;
    await api(`/runs/${this.runId}/steer`, { method: "POST", body: { text } });
    $("steer-text").value = "";
    this.timeline.box.appendChild(el("div", "note", `steered: ${text}`));
  },

  async cancel() {
    if (this.runId) await api(`/runs/${this.runId}/cancel`, { method: "POST" });
  },
};

// A stored session as the events it produced: the store keeps every event but the text and
// reasoning deltas. Each top-level turn_end row carries its turn's own words (the prompt or
// steering it began with, its text and reasoning), so they land under the right turn even when
// the session was steered or compacted. Sessions recorded before that have only the messages:
// each top-level turn wrote one assistant message, and each run started from one user message.
function replayStored(timeline, detail) {
  const ends = new Map(detail.events.filter((e) => e.type === "turn_end" && !e.agent
    && typeof e.text === "string").map((e) => [`${e.run_id}/${e.turn}`, e]));
  const assistants = detail.messages.filter((m) => m.role === "assistant");
  const users = detail.messages.filter((m) => m.role === "user");
  const results = new Map(detail.messages.filter((m) => m.role === "tool")
    .map((m) => [m.tool_call_id, m.content]));
  let run = null;
  for (const event of detail.events) {
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

$("start").addEventListener("click", () => page.start().catch(showError));
$("prompt").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) page.start().catch(showError);
});
$("new-session").addEventListener("click", () => page.newSession());
$("steer").addEventListener("click", () => page.steer().catch(showError));
$("cancel").addEventListener("click", () => page.cancel().catch(showError));
let searchTimer = null;
$("search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => page.loadSessions().catch(showError), 250);
});
page.loadSessions().catch(showError);
page.loadRuns().catch(showError);
setInterval(() => page.loadRuns().catch(() => {}), 5000);
