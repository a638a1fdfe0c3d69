// loopwright serve — the web page. Plain JavaScript modules, no build step; the Markdown and
// highlighting libraries are vendored under vendor/ (see vendor/README.md).
"use strict";

import { showBatch } from "./batches.js";
import {
  $, LINKED_SESSION, TOKEN, api, el, login, logout, money, showError, when, whenLoggedOut,
} from "./dom.js";
import { follow } from "./stream.js";
import { Timeline, replayStored } from "./timeline.js";
import { UsageCharts } from "./usage.js";

/** A list item that opens session `id` in this tab on a click, and is a link to it for a
 * middle or Ctrl/⌘-click: the new tab logs itself in from this one (dom.js's `login`). */
function sessionItem(className, id, open, ...children) {
  const item = el("li", className);
  const link = el("a", "open-link");
  link.href = `/#session=${encodeURIComponent(id)}`;
  link.append(...children);
  item.appendChild(link);
  item.addEventListener("click", (event) => {
    if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    open().catch(showError);
  });
  return item;
}

const page = {
  sessionId: null, batchId: null, stream: null, runId: null, news: null, live: new Map(),
  listTimer: null,
  timeline: new Timeline($("timeline"), new UsageCharts($("usage"), $("charts"))),

  async loadSessions() {
    const q = $("search").value.trim();
    const found = await api(`/sessions?limit=50${q ? `&q=${encodeURIComponent(q)}` : ""}`);
    const list = $("sessions");
    list.replaceChildren();
    for (const session of found.sessions) {
      if (session.parent_id && !q) continue;  // sub-agents show inside their parent's timeline
      const running = [...this.live.values()].some((run) => run.session_id === session.id);
      const item = sessionItem(`session${session.id === this.sessionId ? " open" : ""}`,
        session.id, () => this.openSession(session.id),
        el("span", "title", session.title || session.id),
        el("span", "meta", `${session.model} · ${when(session.updated)} · ${session.runs} run(s)`
          + ` · ${running ? "running" : session.stop_reason || ""} ${money(session.cost)}`),
        ...(session.snippet ? [el("span", "snippet", session.snippet)] : []));
      item.dataset.id = session.id;
      if (running) item.classList.add("running");
      list.appendChild(item);
    }
    if (!found.sessions.length) list.appendChild(el("li", "dim", q ? "No match." : "None yet."));
  },

  /** Reload the session list soon: several news items in a burst make one request. */
  refreshSessions() {
    clearTimeout(this.listTimer);
    this.listTimer = setTimeout(() => this.loadSessions().catch(showError), 50);
  },

  async loadRuns() {
    const [{ runs }, health] = await Promise.all([api("/runs"), api("/health")]);
    $("health").textContent = `v${health.version}`;
    this.live = new Map(runs.filter((r) => !r.finished).map((r) => [r.id, r]));
    this.showRuns();
  },

  showRuns() {
    $("live-count").textContent = `${this.live.size} live run(s)`;
    const list = $("runs");
    list.replaceChildren();
    for (const run of this.live.values()) {
      const item = sessionItem("run", run.session_id, () => this.openSession(run.session_id),
        `${run.id.slice(0, 8)} · ${run.model || ""}`);
      item.dataset.id = run.id;
      list.appendChild(item);
    }
    if (!list.children.length) list.appendChild(el("li", "dim", "None."));
  },

  /** Runs starting and ending on this server, as they happen (GET /runs/news). A hidden tab
   * lets go of its stream: a browser opens only six connections to one server, for all tabs. */
  followNews() {
    if (this.news) this.news.close();
    this.news = document.hidden || !TOKEN ? null : follow("/runs/news", {
      onMessage: (data) => {
        const { type, run } = JSON.parse(data);
        if (type === "run_started") this.live.set(run.id, run);
        else this.live.delete(run.id);
        this.showRuns();
        this.refreshSessions();
      },
      onOpen: () => {  // what happened while away
        this.loadRuns().catch(showError);
        this.refreshSessions();
      },
    });
  },

  async loadBatches() {
    const { batches } = await api("/batches");
    $("batches-head").hidden = $("batches").hidden = !batches.length;
    const list = $("batches");
    list.replaceChildren();
    for (const batch of batches) {
      const item = el("li", "batch");
      item.dataset.id = batch.id;
      const s = batch.summary;
      item.append(el("span", "title", batch.name), el("span", "meta", s
        ? `${s.solved}/${s.tasks} solved` : batch.error));
      item.addEventListener("click", () => this.openBatch(batch.id).catch(showError));
      list.appendChild(item);
    }
  },

  async openBatch(number) {
    const detail = await api(`/batches/${number}`);
    this.stop();
    this.sessionId = null;
    this.batchId = number;
    this.markOpen();
    this.showView("batch");
    showBatch($("batch"), detail, (id) => this.openSession(id).catch(showError));
  },

  showView(name) {  // the session view (composer, charts, timeline) or a batch
    $("batch").hidden = name !== "batch";
    for (const id of ["composer", "timeline"]) $(id).hidden = name === "batch";
    if (name === "batch") $("usage").hidden = true;
    document.body.classList.remove("nav-open");
  },

  async openSession(id) {
    const detail = await api(`/sessions/${encodeURIComponent(id)}`);
    this.stop();
    this.showView("session");
    this.sessionId = detail.session.id;
    $("session-title").textContent =
      `Session ${detail.session.id.slice(0, 8)} — ${detail.session.title || ""}`;
    this.timeline.clear();
    this.timeline.chart.setWindow(detail.context_window);
    const live = detail.live_run ? await api(`/runs/${detail.live_run}`).catch(() => null) : null;
    replayStored(this.timeline, detail, { skipRun: live ? live.id : null });
    this.timeline.costs(detail.turns);
    this.markOpen();
    if (live) {
      this.timeline.prompt(live.prompt);
      this.watch(live.id);
    }
  },

  markOpen() {
    document.querySelectorAll("#sessions li").forEach((li) => {
      li.classList.toggle("open", li.dataset.id === this.sessionId);
    });
    document.querySelectorAll("#batches li").forEach((li) => {
      li.classList.toggle("open", this.sessionId === null && li.dataset.id === `${this.batchId}`);
    });
  },

  newSession() {
    this.stop();
    this.showView("session");
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
      this.timeline.chart.setWindow(started.context_window);
      this.timeline.prompt(prompt);
      this.timeline.waiting();
      this.watch(started.run_id);
      this.markOpen();
    } finally {
      $("start").disabled = false;
    }
  },

  watch(runId) {
    this.stop();
    this.runId = runId;
    this.timeline.runId = runId;
    $("controls").hidden = false;
    this.stream = follow(`/runs/${encodeURIComponent(runId)}/events`, {
      onMessage: (data) => {
        const event = JSON.parse(data);
        this.timeline.add(event);
        if (!event.agent && ["done", "error", "cancelled"].includes(event.type)) {
          this.finished();
        }
      },
    });
  },

  async finished() {
    this.stop();
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

  begin() {
    $("logout").hidden = false;
    this.loadSessions().catch(showError);
    this.loadBatches().catch(showError);
    this.followNews();
    if (LINKED_SESSION) this.openSession(LINKED_SESSION).catch(showError);
  },

  /** This tab was logged out (by itself, another tab or the server): nothing of the server's
   * stays on show, and `message` says why. */
  loggedOut(message) {
    this.stop();
    this.followNews();  // with no token: stops following
    this.newSession();
    for (const id of ["sessions", "runs", "batches"]) $(id).replaceChildren();
    $("logout").hidden = true;
    showError(message);
  },
};

$("start").addEventListener("click", () => page.start().catch(showError));
$("prompt").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) page.start().catch(showError);
});
$("new-session").addEventListener("click", () => page.newSession());
$("steer").addEventListener("click", () => page.steer().catch(showError));
$("cancel").addEventListener("click", () => page.cancel().catch(showError));
$("menu").addEventListener("click", () => document.body.classList.toggle("nav-open"));
let searchTimer = null;
$("search").addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => page.loadSessions().catch(showError), 250);
});
$("logout").addEventListener("click", () => logout());
document.addEventListener("visibilitychange", () => page.followNews());
whenLoggedOut((message) => page.loggedOut(message));
login().then(() => page.begin(), showError);
