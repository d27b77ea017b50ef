// The console's DOM building and formatting, shared by its pages (no state, no imports).

const $ = (selector) => document.querySelector(selector);

/** Builds an element: props are attributes (`class`, `aria-*`, …), `text`, or `on<event>` handlers. */
function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  setProps(el, props);
  el.append(...children.flat().filter((c) => c !== null && c !== undefined && c !== false).map((c) => (c instanceof Node ? c : String(c))));
  return el;
}
/** replaceChildren leaving out null, undefined and false, as `h` does (the DOM would write them as the text "null"). */
function fill(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}
const SVG_NS = "http://www.w3.org/2000/svg";
function s(tag, props = {}, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setProps(el, props);
  el.append(...children.flat().filter((c) => c !== null && c !== undefined).map((c) => (c instanceof Node ? c : String(c))));
  return el;
}
function setProps(el, props) {
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "text") el.textContent = String(value);
    else if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? "" : String(value));
  }
}

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

export { $, announce, dash, fill, fmtCost, fmtDate, fmtMs, fmtTimings, h, isActive, progressBar, s, setProgress, shortId, statusBadge, usageCost };
