// Small helpers the page's modules share: building nodes, calling the API, formatting.
// Everything the model or a tool wrote goes into the page as text (textContent); only an
// answer's Markdown becomes markup, and only through markdown.js's sanitiser.
"use strict";

const TOKEN = document.querySelector('meta[name="loopwright-token"]').content;

export const $ = (id) => document.getElementById(id);

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

export async function api(path, options = {}) {
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
