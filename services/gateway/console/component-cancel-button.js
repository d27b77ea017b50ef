// "Cancel the job", on a job's page and under a job just started.

import { api } from "./api.js";
import { h } from "./dom.js";

/** Posts the cancel of the job at `base` and hands its answer to `done`; a refusal is told in `note`. */
export function cancelButton(base, signal, note, done, id) {
  const button = h("button", {
    type: "button",
    class: "quiet",
    id,
    text: "Cancel the job",
    onclick: async () => {
      button.disabled = true;
      try {
        done(await api(`${base}/cancel`, { method: "POST", body: {}, signal }));
      } catch (error) {
        note.textContent = `Could not cancel: ${error.message}`;
        button.disabled = false;
      }
    },
  });
  return button;
}
