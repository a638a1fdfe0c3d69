// Small helpers the page's modules share: building nodes, calling the API, formatting.
// Everything the model or a tool wrote goes into the page as text (textContent); only an
// answer's Markdown becomes markup, and only through markdown.js's sanitiser.
"use strict";

const TOKEN_KEY = "loopwright-token";
const CHANNEL = "loopwright-login";
const ASK_MS = 3000;  // how long a new tab waits for an open tab (a background one answers late)

/** The fragment's fields (`#token=…&session=…`), which no request carries; the address bar is
 * cleared of them, so the history and a shared screen do not show the token. */
function takeFragment() {
  const fields = {};
  for (const pair of location.hash.slice(1).split("&")) {
    const [key, value] = pair.split("=", 2);
    if (!key || !value) continue;
    try {  // decodeURIComponent, not URLSearchParams: a "+" in a token is no space
      fields[key] = decodeURIComponent(value);
    } catch { /* a malformed %-escape: not a value */ }
  }
  if (location.hash || location.search) history.replaceState(null, "", location.pathname);
  return fields;
}

const fragment = takeFragment();
// the link pasted into the address bar of an open page changes only its fragment, which loads
// nothing: the page starts over to read it (a logged-out tab logs in, a session opens)
addEventListener("hashchange", () => { if (location.hash) location.reload(); });
/** The session the link asked to open (`/#session=ID`: a session list item's link). */
export const LINKED_SESSION = fragment.session || null;

/** The server's token, kept in this tab's sessionStorage (one origin's: this server's port
 * alone). A tab without one (opened by a middle-click, a pasted address, a new tab) asks the
 * open tabs of this origin over a BroadcastChannel, which no other origin can join, and one of
 * them hands it over; with none open, the printed link is needed again. Nothing is written to
 * localStorage or a cookie: once the last tab is closed, no new page can get the token back
 * (a tab the browser itself reopens brings back its own sessionStorage). */
export let TOKEN = null;
const channel = new BroadcastChannel(CHANNEL);
let onLogout = () => {};

function keep(token) {
  TOKEN = token;
  sessionStorage.setItem(TOKEN_KEY, token);
}

/** Logs this tab in (the link's token, the stored one, or an open tab's); resolves to the
 * token, or null when none came. */
export function login() {
  if (fragment.token) keep(fragment.token);
  else if (sessionStorage.getItem(TOKEN_KEY)) TOKEN = sessionStorage.getItem(TOKEN_KEY);
  if (TOKEN) return Promise.resolve(TOKEN);
  return new Promise((resolve) => {
    const handed = ({ data }) => {
      if (data?.type !== "token" || typeof data.token !== "string") return;
      channel.removeEventListener("message", handed);
      clearTimeout(timer);
      keep(data.token);
      resolve(data.token);
    };
    const timer = setTimeout(() => {  // a late answer must not log in a page showing NO_TOKEN
      channel.removeEventListener("message", handed);
      resolve(null);
    }, ASK_MS);
    channel.addEventListener("message", handed);
    channel.postMessage({ type: "ask" });
  });
}

/** Logs every tab of this origin out: each forgets the token and calls its `onLogout`. */
export function logout() {
  channel.postMessage({ type: "logout" });
  forget();
}

export function whenLoggedOut(callback) { onLogout = callback; }

function forget() {
  TOKEN = null;
  sessionStorage.removeItem(TOKEN_KEY);
  onLogout();
}

channel.addEventListener("message", ({ data }) => {
  if (data?.type === "ask" && TOKEN) channel.postMessage({ type: "token", token: TOKEN });
  else if (data?.type === "logout" && TOKEN) forget();
});

export const NO_TOKEN = "Open the link `loopwright serve` printed: it holds the server's token.";
export const LOGGED_OUT = "Logged out in every tab. Open the link `loopwright serve` printed to "
  + "log in again.";

export const $ = (id) => document.getElementById(id);

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

export async function api(path, options = {}) {
  if (!TOKEN) throw new Error(NO_TOKEN);
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

export function showError(error) {
  const box = $("error");
  box.hidden = !error;
  box.textContent = error ? String(error.message || error) : "";
}

export const when = (seconds) => new Date(seconds * 1000).toLocaleString();
export const tokens = (n) => (n || 0).toLocaleString();
export const money = (usd) => (usd === null || usd === undefined || typeof usd !== "number"
  ? "" : `$${usd.toFixed(4)}`);
export const pretty = (value) => (typeof value === "string" ? value
  : JSON.stringify(value, null, 2));
