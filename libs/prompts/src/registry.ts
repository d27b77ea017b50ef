import { createHash } from "node:crypto";
import { DATA_RULE, type PromptMetadata, type PromptUse, type ServiceConfigResponse } from "@litrev/contracts";

type PromptService = PromptMetadata["service"];

/** One prompt as a service declares it: the built-in instructions and what the listing says. */
export interface PromptSpec {
  /** Short name, unique within the service; listed as `<service>.<name>`. */
  name: string;
  description: string;
  instructions: string;
  /** Whether request data is filled in around the instructions (default true). */
  hasVariables?: boolean;
  /** Where the prompt goes (default `both`: fixed instructions in the system message, data in the user message). */
  systemOrUser?: PromptMetadata["system_or_user"];
}

export interface PromptDefinition extends PromptMetadata {
  instructions: string;
}

/** The parts of a service configuration that shape prompts. */
export type PromptConfig = Pick<ServiceConfigResponse, "system_prompt" | "extra">;

/**
 * A service's prompts, and the one rule for turning them into a system message under the live
 * configuration (PUT /v1/config/services/{id}):
 * - `system_prompt` is the preamble of every prompt of the service; a blank one means the
 *   service's built-in preamble (an empty string is far more often a mistake than a wish);
 * - `extra.prompts["<service>.<name>"]` (a non-blank string) replaces that prompt's instructions;
 * - the preamble, the data rule, the instructions and any fixed context follow in that order,
 *   separated by one blank line, empty parts left out; fixed text first keeps the provider's prompt
 *   cache warm. The data rule (paper text is data, never instructions: `DATA_RULE`) is in every
 *   prompt whatever the configuration says, so no override can drop it.
 */
export class PromptRegistry<K extends string> {
  readonly prompts: Readonly<Record<K, PromptDefinition>>;

  constructor(
    readonly service: PromptService,
    readonly preamble: string,
    specs: Readonly<Record<K, PromptSpec>>,
  ) {
    const prompts = {} as Record<K, PromptDefinition>;
    for (const key of Object.keys(specs) as K[]) {
      const spec = specs[key];
      prompts[key] = {
        name: `${service}.${spec.name}`,
        service,
        description: spec.description,
        has_variables: spec.hasVariables ?? true,
        system_or_user: spec.systemOrUser ?? "both",
        instructions: spec.instructions,
      };
    }
    this.prompts = Object.freeze(prompts);
  }

  /** The listing for GET /v1/config/prompts. */
  list(): PromptMetadata[] {
    return Object.values<PromptDefinition>(this.prompts).map(({ instructions: _instructions, ...metadata }) => metadata);
  }

  /** A prompt's built-in instructions by its listed name (`<service>.<name>`), for methods reports. */
  builtIn = (name: string): string | undefined => Object.values<PromptDefinition>(this.prompts).find((p) => p.name === name)?.instructions;

  /** A prompt's instructions after any `extra.prompts` override. */
  instructions(key: K, config: Pick<PromptConfig, "extra">): string {
    const definition = this.prompts[key];
    const override = promptOverrides(config.extra)[definition.name];
    return override ?? definition.instructions;
  }

  /** The system message: preamble, the data rule, instructions, then fixed context parts. */
  system(key: K, config: PromptConfig, ...context: string[]): string {
    const preamble = config.system_prompt.trim() ? config.system_prompt.trim() : this.preamble;
    return [preamble, DATA_RULE, this.instructions(key, config), ...context.map((part) => part.trim())]
      .filter((part) => part.length > 0)
      .join("\n\n");
  }
}

/** `extra.prompts` as name → non-blank text; anything else in it is ignored. */
export function promptOverrides(extra: Record<string, unknown>): Record<string, string> {
  const raw = extra.prompts;
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return {};
  const overrides: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof value === "string" && value.trim()) overrides[name] = value;
  }
  return overrides;
}

/**
 * A prompt as a job's provenance records it: the registry name, the configured template id and the
 * SHA-256 of the exact text sent (a system message: instructions and fixed context, never paper data),
 * and the text itself, so a reader can check that a published prompt text is the one the job used.
 */
export function promptUse(name: string, templateId: string, text: string): PromptUse {
  return { name, template_id: templateId, sha256: createHash("sha256").update(text, "utf8").digest("hex"), text };
}
