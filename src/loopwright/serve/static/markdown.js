// A model's answer as Markdown: marked parses it, DOMPurify sanitises the HTML into a DOM
// fragment (no string of it ever reaches innerHTML), highlight.js colours fenced code.
// Whatever the model writes is hostile: no images or media (a URL in them would fetch on its own
// and could carry data out), no forms, no styles, links only to http(s) and mailto, opened apart.
"use strict";

const { marked, DOMPurify, hljs } = window;

const parser = new marked.Marked({ gfm: true, breaks: false, async: false });
const FORBID_TAGS = ["img", "image", "svg", "math", "iframe", "frame", "object", "embed", "form",
  "input", "button", "textarea", "select", "option", "style", "link", "meta", "base", "video",
  "audio", "source", "track", "picture", "canvas", "dialog", "template"];
const SAFE_HREF = /^(https?:|mailto:)/i;
const LANGUAGE_CLASS = /^language-[\w+#.-]{1,40}$/;

DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.hasAttribute("class")) {  // only marked's language mark on code survives
    const kept = node.tagName === "CODE"
      ? [...node.classList].filter((name) => LANGUAGE_CLASS.test(name)) : [];
    if (kept.length) node.setAttribute("class", kept.join(" "));
    else node.removeAttribute("class");
  }
  if (node.tagName === "A") {
    const href = (node.getAttribute("href") || "").trim();
    if (SAFE_HREF.test(href)) {
      node.setAttribute("target", "_blank");
      node.setAttribute("rel", "noopener noreferrer nofollow");
    } else {
      node.removeAttribute("href");
    }
  }
});
hljs.configure({ ignoreUnescapedHTML: true });

const PURIFY = {
  FORBID_TAGS, FORBID_ATTR: ["style", "id", "name", "srcset", "action", "formaction"],
  ALLOW_DATA_ATTR: false, RETURN_DOM_FRAGMENT: true,
};

/** Replace `box`'s content with `text` rendered as sanitised Markdown; as plain text when the
 * parser gives up on it (marked recurses once per nesting level: an answer thousands of levels
 * deep overflows the stack, and the error stopped the timeline). */
export function renderMarkdown(box, text) {
  let fragment;
  try {
    fragment = DOMPurify.sanitize(parser.parse(text || "").trim(), PURIFY);
  } catch {  // whatever made it fail, the words still show, and nothing of them as markup
    box.replaceChildren(document.createTextNode(text || ""));
    return;
  }
  for (const code of fragment.querySelectorAll("pre > code")) {
    const mark = [...code.classList].find((name) => name.startsWith("language-"));
    const language = mark ? mark.slice("language-".length) : "";
    if (language && hljs.getLanguage(language)) hljs.highlightElement(code);
  }
  box.replaceChildren(fragment);
}

/** Renders `box` from `text()` at most once per `interval` ms while text streams in: parsing
 * the whole answer on every delta would cost quadratic time on long answers. */
export class MarkdownStream {
  constructor(box, interval = 60) {
    this.box = box; this.text = ""; this.interval = interval; this.last = 0; this.timer = null;
  }

  append(piece) {
    this.text += piece;
    if (this.timer !== null) return;
    const wait = this.last + this.interval - performance.now();
    if (wait <= 0) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait);
  }

  /** Start again from nothing (the text so far is taken back). */
  reset() {
    this.text = "";
    this.flush();
  }

  flush() {
    clearTimeout(this.timer);
    this.timer = null;
    this.last = performance.now();
    renderMarkdown(this.box, this.text);
  }
}
