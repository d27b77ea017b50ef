import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, operations, paths } from "./schema";

export type { components, operations, paths };

/** The spec's three error bodies, as the OpenAPI document names them. */
export type ValidationError = components["schemas"]["ValidationError"];
export type SimpleError = components["schemas"]["SimpleError"];
export type ClassifiedError = components["schemas"]["ClassifiedError"];
/** Every named resource of the document: `Schemas["ScreeningJob"]`, `Schemas["IndexerField"]`, … */
export type Schemas = components["schemas"];

export interface LitrevClientOptions {
  /** Scheme, host and port of the gateway, e.g. `http://localhost:8000`. */
  baseUrl: string;
  /** The service key. */
  apiKey: string;
  /** Send the key as `Authorization: Bearer` instead of `X-API-Key`. */
  bearer?: boolean;
  /** A provider key for this client's requests (`X-LLM-API-Key`); the server's own is used otherwise. */
  providerKey?: string;
  /** A fetch implementation (tests, proxies); the global one by default. */
  fetch?: typeof globalThis.fetch;
}

export type LitrevClient = Client<paths>;

/**
 * A typed client for the literature-review AI service: paths, parameters, bodies and every
 * documented status are checked by TypeScript against the gateway's OpenAPI document.
 *
 * ```ts
 * const api = createLitrevClient({ baseUrl: "http://localhost:8000", apiKey });
 * const { data, error } = await api.POST("/v1/criteria/analyze-question", { body: { research_question: "…", mock: true } });
 * ```
 */
export function createLitrevClient(options: LitrevClientOptions): LitrevClient {
  const client = createClient<paths>({ baseUrl: options.baseUrl, ...(options.fetch ? { fetch: options.fetch } : {}) });
  const auth: Middleware = {
    onRequest({ request }) {
      if (options.bearer) request.headers.set("authorization", `Bearer ${options.apiKey}`);
      else request.headers.set("x-api-key", options.apiKey);
      if (options.providerKey) request.headers.set("x-llm-api-key", options.providerKey);
      return request;
    },
  };
  client.use(auth);
  return client;
}
