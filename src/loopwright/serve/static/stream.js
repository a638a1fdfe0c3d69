// Server-Sent Events read with fetch: EventSource cannot send the Authorization header, and the
// token is kept out of cookies and URLs (see serve/auth.py).
"use strict";

import { TOKEN, refused } from "./dom.js";

const RETRY_MS = 1000;

/** Follow the SSE stream at `path`: `onMessage(data)` for each event, `onOpen()` each time it
 * (re)connects. A dropped connection is taken up again after the last event seen (Last-Event-ID),
 * as EventSource would, and so is a stream the server ended; a refusal (a status other than 200)
 * ends it, as EventSource's does. Returns `{ close() }`. */
export function follow(path, { onMessage, onOpen = () => {} }) {
  const stopped = new AbortController();
  let lastId = null;
  let retryMs = RETRY_MS;

  const dispatch = (block) => {
    let data = null;
    for (const line of block.split(/\r\n|\r|\n/)) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") data = data === null ? value : `${data}\n${value}`;
      else if (field === "id") lastId = value;
      else if (field === "retry" && /^\d+$/.test(value)) retryMs = Number(value);
    }
    if (data !== null) onMessage(data);
  };

  const connect = async () => {
    const token = TOKEN;
    const headers = { authorization: `Bearer ${token}`, accept: "text/event-stream" };
    if (lastId !== null) headers["last-event-id"] = lastId;
    const response = await fetch(path, { headers, signal: stopped.signal, cache: "no-store" });
    if (!response.ok) {
      stopped.abort();
      refused(response.status, token);
      throw new Error(`${response.status} ${response.statusText}`);
    }
    onOpen();
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffered += value;
      const blocks = buffered.split(/\r\n\r\n|\n\n|\r\r/);
      buffered = blocks.pop();
      blocks.forEach(dispatch);
    }
  };

  (async () => {
    while (!stopped.signal.aborted) {
      try {
        await connect();
      } catch (error) {
        console.warn(`${path}: ${error.message || error}`);
      }
      if (stopped.signal.aborted) return;
      await new Promise((resolve) => { setTimeout(resolve, retryMs); });
    }
  })();
  return { close: () => stopped.abort() };
}
