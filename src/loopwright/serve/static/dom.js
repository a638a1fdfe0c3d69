// Small helpers the page's modules share: building nodes, calling the API, formatting.
// Everything the model or a tool wrote goes into the page as text (textContent); only an
// answer's Markdown becomes markup, and only through markdown.js's sanitiser.
"use strict";

const TOKEN_KEY = "loopwright-token";
// set beside the token by a page that keeps only its own logins there: a token without it was
// kept by an earlier version, maybe the server's own (`goOnWith`)
const LOGIN_MARK_KEY = "loopwright-token-is-login";
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

/** This tab's login token. The printed link's token (the server's own) is traded at once for
 * a login of the page's (POST /login, serve/logins.py), which logging out ends on the server;
 * that is kept in this tab's sessionStorage (one origin's: this server's port alone). A tab
 * without one (opened by a middle-click, a pasted address, a new tab) asks the open tabs of
 * this origin over a BroadcastChannel, which no other origin can join, and one of them hands it
 * over; with none open, the printed link is needed again. Nothing is written to localStorage or
 * a cookie: once the last tab is closed, no new page can get the token back. A tab the browser
 * restores brings back its own sessionStorage: its token works while the login lives, and is
 * refused (the tab logs itself out) once any tab logged out; one restored from before the page
 * had logins holds the server's own token, traded for a login at load (`goOnWith`). */
export let TOKEN = null;
const channel = new BroadcastChannel(CHANNEL);
let onLogout = () => {};

function keep(token) {
  TOKEN = token;
  sessionStorage.setItem(TOKEN_KEY, token);
  sessionStorage.setItem(LOGIN_MARK_KEY, "1");
  return token;
}

function askLogin(token) {
  return fetch("/login", {
    method: "POST", headers: { authorization: `Bearer ${token}` }, cache: "no-store",
  });
}

/** The server's token traded for a login of this page's. */
async function logIn(serverToken) {
  return loginFrom(await askLogin(serverToken));
}

/** The token this tab kept, as it goes on. One kept by an earlier version (no mark beside it)
 * may be the server's own, which the browser gives back to a tab it restores from before the
 * page had logins: that one is traded for a login at once, so the tab keeps nothing no logout
 * can end and its Log out ends its login. Asked once: a page's login is kept as it is (the
 * server refuses to trade one: 403), and so is one the server refuses (401: a login since
 * ended), which the tab's first request finds out, logging it out. */
async function goOnWith(stored) {
  if (sessionStorage.getItem(LOGIN_MARK_KEY)) return stored;
  const response = await askLogin(stored);
  return response.status === 201 ? loginFrom(response) : stored;
}

/** The login token POST /login answered with, or an error saying why there is none. */
async function loginFrom(response) {
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || `${response.status} ${response.statusText}`);
  // a body cut short (the tab went elsewhere at once) reads as no token: none is kept
  if (typeof data.token !== "string") throw new Error(NO_TOKEN);
  return data.token;
}

/** Logs this tab in (the link's token, the stored one, or an open tab's); resolves to the
 * token, or rejects with what the page should say. */
export async function login() {
  if (fragment.token) return keep(await logIn(fragment.token));
  const stored = sessionStorage.getItem(TOKEN_KEY);
  if (stored) return keep(await goOnWith(stored));
  return new Promise((resolve, reject) => {
    const done = (token, refusal) => {
      channel.removeEventListener("message", heard);
      clearTimeout(timer);
      if (token) resolve(keep(token));
      else reject(new Error(refusal));
    };
    // a logout heard while waiting ends the wait: a tab that had not heard it yet (a background
    // one answers late) may still hand over the token after it, and must not log this one in
    const heard = ({ data }) => {
      if (data?.type === "logout") done(null, LOGGED_OUT);
      else if (data?.type === "token" && typeof data.token === "string") done(data.token);
    };
    // a late answer must not log in a page showing NO_TOKEN
    const timer = setTimeout(() => done(null, NO_TOKEN), ASK_MS);
    channel.addEventListener("message", heard);
    channel.postMessage({ type: "ask" });
  });
}

/** Logs every tab of this origin out: each forgets the token and calls its `onLogout`, then
 * ends its login on the server (a tab logged in by the link again holds a login of its own). */
export function logout() {
  const token = TOKEN;
  channel.postMessage({ type: "logout", token });
  forget(LOGGED_OUT);
  endLogin(token);
}

/** Tells the server to end the login of `token` (keepalive: the request outlives a tab closed
 * at once); one another tab already ended is refused (401), which is what was asked. */
function endLogin(token) {
  fetch("/logout", {
    method: "POST", headers: { authorization: `Bearer ${token}` }, keepalive: true,
  }).then((response) => {
    if (!response.ok && response.status !== 401) throw new Error(response.statusText);
  }).catch((error) => showError(`${NOT_ENDED} (${error.message || error})`));
}

/** `onLogout(message)`: this tab was logged out (here, by another tab, or by the server). */
export function whenLoggedOut(callback) { onLogout = callback; }

let loggedOutWith = null;  // what the page said when this tab was logged out

function forget(message) {
  TOKEN = null;
  loggedOutWith = message;
  sessionStorage.removeItem(TOKEN_KEY);
  sessionStorage.removeItem(LOGIN_MARK_KEY);
  onLogout(message);
}

/** An answer of status `status` to a request sent with `token`: when the server refused it
 * (401), its login has ended (another browser window logged out, the server restarted), so this
 * tab forgets it. Returns what the page says about it, or null when it is not that. */
export function refused(status, token) {
  if (status !== 401 || !token) return null;
  if (token === TOKEN) forget(ENDED);
  return TOKEN ? null : loggedOutWith;
}

channel.addEventListener("message", ({ data }) => {
  if (data?.type === "ask" && TOKEN) channel.postMessage({ type: "token", token: TOKEN });
  else if (data?.type === "logout" && TOKEN) {
    const token = TOKEN;
    forget(LOGGED_OUT);
    if (token !== data.token) endLogin(token);
  }
});

export const NO_TOKEN = "Open the link `loopwright serve` printed: it holds the server's token.";
export const LOGGED_OUT = "Logged out in every tab. Open the link `loopwright serve` printed to "
  + "log in again.";
export const ENDED = "This tab's login has ended (logged out, or the server restarted). Open the "
  + "link `loopwright serve` printed to log in again.";
const NOT_ENDED = "Logged out in every tab, but the server could not be told to end the login";

export const $ = (id) => document.getElementById(id);

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

export async function api(path, options = {}) {
  const token = TOKEN;
  if (!token) throw new Error(NO_TOKEN);
  const headers = { authorization: `Bearer ${token}` };
  if (options.body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, {
    method: options.method || "GET", headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const ended = refused(response.status, token);
  if (ended) throw new Error(ended);
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
