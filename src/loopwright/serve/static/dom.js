// Small helpers the page's modules share: building nodes, calling the API, formatting.
// Everything the model or a tool wrote goes into the page as text (textContent); only an
// answer's Markdown becomes markup, and only through markdown.js's sanitiser.
"use strict";

const TOKEN_KEY = "loopwright-token";

/** The server's token: from the printed link's fragment (`#token=…`, which no request carries)
 * into this tab's sessionStorage, whose origin is this server's port alone; then out of the
 * address bar, so the history and a shared screen do not show it. A reload finds it stored. */
function takeToken() {
  for (const pair of location.hash.slice(1).split("&")) {
    const [key, value] = pair.split("=", 2);
    if (key !== "token" || !value) continue;
    try {  // decodeURIComponent, not URLSearchParams: a "+" in a token is no space
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(value));
    } catch { /* a malformed %-escape: not a token */ }
  }
  if (location.hash || location.search) history.replaceState(null, "", location.pathname);
  return sessionStorage.getItem(TOKEN_KEY);
}

export const TOKEN = takeToken();
export const NO_TOKEN = "Open the link `loopwright serve` printed: it holds the server's token.";

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
