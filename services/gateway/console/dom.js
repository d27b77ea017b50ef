// The console's DOM building and formatting, shared by its screens and components (no state, no
// imports).

const $ = (selector) => document.querySelector(selector);

const SVG_NS = "http://www.w3.org/2000/svg";
const present = (c) => c !== null && c !== undefined && c !== false;

/** Builds an element: props are attributes (`class`, `aria-*`, …), `text`, or `on<event>` handlers; children nest in arrays. */
function el(ns, tag, props = {}, ...children) {
  const node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
  for (const [name, value] of Object.entries(props)) {
    if (!present(value)) continue;
    if (name === "text") node.textContent = String(value);
    else if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  node.append(...children.flat(Infinity).filter(present).map((c) => (c instanceof Node ? c : String(c))));
  return node;
}
const h = (tag, props, ...children) => el(null, tag, props, ...children);
const s = (tag, props, ...children) => el(SVG_NS, tag, props, ...children);
/** replaceChildren leaving out null, undefined and false, as `h` does (the DOM would write them as the text "null"). */
const fill = (node, ...children) => node.replaceChildren(...children.flat(Infinity).filter(present));

const dash = "—";
const fmtCost = (usd) => (typeof usd === "number" ? `$${usd.toFixed(usd > 0 && usd < 0.01 ? 4 : 2)}` : dash);
const fmtMs = (ms) => (typeof ms === "number" ? (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`) : dash);
const fmtDate = (iso) => (iso ? new Date(iso).toLocaleString() : dash);
const fmtPct = (p) => `${Math.round((p ?? 0) * 100)}%`;
const shortId = (id) => String(id).slice(0, 8);
const fmtTimings = (timings) =>
  Object.entries(timings ?? {})
    .map(([stage, ms]) => `${stage} ${fmtMs(ms)}`)
    .join(" · ") || dash;
const usageCost = (usage) => (usage && typeof usage.cost_usd === "number" ? usage.cost_usd : usage && typeof usage.estimated_cost_usd === "number" ? usage.estimated_cost_usd : null);
const isActive = (status) => status === "pending" || status === "running";

function statusBadge(status) {
  return h("span", { class: `status status-${status}`, "data-status": status, text: status });
}

function progressBar(progress, label) {
  const bar = h("progress", { max: "1", value: String(progress ?? 0), "aria-label": label });
  const out = h("output", { text: fmtPct(progress) });
  return h("div", { class: "progress" }, bar, out);
}
function setProgress(container, progress) {
  const bar = container.querySelector("progress");
  const out = container.querySelector("output");
  if (!bar || progress < Number(bar.value)) return; // progress never goes back
  bar.value = progress;
  out.textContent = fmtPct(progress);
}

function announce(text) {
  $("#announcer").textContent = text;
}

/** A column header; `num` right-aligns it. */
const col = (text, num = false) => h("th", { scope: "col", class: num ? "num" : undefined, text });

/**
 * A table in its scrolling frame (`bare`: without): `caption` and other props, column titles
 * (strings, or cells made with `col`), then a tbody or its rows.
 */
function table({ caption, bare, ...props }, heads, body) {
  const head = h("thead", {}, h("tr", {}, heads.map((c) => (c instanceof Node ? c : col(c)))));
  const el = h("table", props, caption ? h("caption", { text: caption }) : null, head, body instanceof Node ? body : h("tbody", {}, body));
  return bare ? el : h("div", { class: "table-wrap" }, el);
}

const pct = (v, digits = 1) => (typeof v === "number" ? `${(v * 100).toFixed(digits)}%` : dash);
const ci = (interval) => (interval ? `${pct(interval.low)}–${pct(interval.high)}` : dash);
/** A paper named by its id and, when known, its title. */
const named = (titles, id) => {
  const title = titles.get(String(id));
  return title ? `${id} “${title.length > 80 ? `${title.slice(0, 79)}…` : title}”` : String(id);
};

export { $, announce, ci, col, dash, fill, fmtCost, fmtDate, fmtMs, fmtTimings, h, isActive, named, pct, progressBar, s, setProgress, shortId, statusBadge, table, usageCost };
