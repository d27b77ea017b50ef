// The console: plain JavaScript served by the gateway as it is (only the import library is
// bundled, by the gateway; nothing is loaded from elsewhere). Every call carries the service key,
// which lives only in this tab's sessionStorage. Live progress comes from the job event streams,
// read with fetch() because EventSource cannot send a header (docs/console.md).
//
// This module signs in and routes: each screen (`screen-*.js`) builds its page from components
// (`component-*.js`), which build on dom.js and api.js; imports go that one way only
// (test/deploy/import-cycles.test.ts).

import { ApiError, KEY_ITEM, api, apiKey, onSignOut, signOut } from "./api.js";
import { $, h } from "./dom.js";
import { KINDS } from "./kinds.js";
import { configView } from "./screen-config.js";
import { jobView } from "./screen-job.js";
import { jobsView } from "./screen-jobs.js";
import { newJobView } from "./screen-new-job.js";

let currentView;

onSignOut((reason) => {
  currentView?.abort();
  showLogin(reason);
});

function showLogin(reason) {
  $("#nav").hidden = true;
  $("#forget").hidden = true;
  $("#view").replaceChildren();
  $("#login").hidden = false;
  const error = $("#login-error");
  error.hidden = !reason;
  error.textContent = reason ?? "";
  $("#key").focus();
}

function render() {
  if (!apiKey()) return showLogin();
  $("#login").hidden = true;
  $("#nav").hidden = false;
  $("#forget").hidden = false;
  const hash = location.hash || "#/jobs";
  const job = new RegExp(`^#/job/(${KINDS.map((kind) => kind.name).join("|")})/([^/]+)$`).exec(hash);
  const section = job ? "jobs" : hash === "#/config" ? "config" : hash === "#/new" ? "new" : "jobs";
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.dataset.section === section) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  currentView?.abort();
  currentView = new AbortController();
  const signal = currentView.signal;
  const view = $("#view");
  view.replaceChildren();
  const shown = job ? jobView(view, job[1], decodeURIComponent(job[2]), signal) : section === "config" ? configView(view, signal) : section === "new" ? newJobView(view, signal) : jobsView(view, signal);
  shown.catch((error) => {
    if (!signal.aborted) view.append(h("p", { class: "alert", role: "alert", text: `Could not load: ${error.message}` }));
  });
}

$("#login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = $("#key").value.trim();
  if (!key) return;
  sessionStorage.setItem(KEY_ITEM, key);
  $("#key").value = "";
  try {
    // One cheap call checks the key before the console opens.
    await api("/v1/config/prompts");
    render();
    $("#main").focus();
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) showLogin(`Could not reach the service: ${error.message}`);
  }
});
$("#forget").addEventListener("click", () => signOut());
window.addEventListener("hashchange", () => {
  render();
  $("#main").focus();
});
render();
