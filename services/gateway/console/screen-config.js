// The configuration screen: each service's model and prompts, the model aliases, the prompt registry.

import { api } from "./api.js";
import { dash, h, table } from "./dom.js";

/** A long text that opens in full: its first line as the summary, all of it inside. */
function fullText(text) {
  if (text.length <= 80) return text;
  return h("details", { class: "full-text" }, h("summary", { text: `${text.slice(0, 79)}…` }), h("pre", { class: "report", text }));
}

export async function configView(view, signal) {
  const [services, models, prompts] = await Promise.all([api("/v1/config/services", { signal }), api("/v1/config/models", { signal }), api("/v1/config/prompts", { signal })]);
  // A cell is text, or an element (a system prompt opens in full).
  const rows = (cells) => cells.map((row) => h("tr", {}, row.map((c, i) => (i === 0 ? h("th", { scope: "row", text: c }) : h("td", {}, c)))));
  const aliases = Object.entries(models.aliases ?? {}).sort(([a], [b]) => a.localeCompare(b));
  view.append(
    h("h1", { text: "Configuration" }),
    h("h2", { text: "Services" }),
    table(
      { id: "services" },
      ["Service", "Model", "Temperature", "Max output tokens", "Prompt template", "System prompt"],
      rows(services.map((c) => [c.service_id, c.model, String(c.temperature), String(c.max_output_tokens), c.prompt_template_id || dash, c.system_prompt ? fullText(c.system_prompt) : dash])),
    ),
    h("h2", { text: "Model aliases" }),
    table({ id: "aliases" }, ["Alias", "Model", "Source"], rows(aliases.map(([alias, model]) => [alias, model, alias in (models.overrides ?? {}) ? "changed through the API" : "built in or environment"]))),
    h("h2", { text: `Prompts (${prompts.length})` }),
    table({ id: "prompts" }, ["Name", "Service", "Role", "Variables", "Description"], rows(prompts.map((p) => [p.name, p.service, p.system_or_user, p.has_variables ? "yes" : "no", p.description]))),
  );
}
