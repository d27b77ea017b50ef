/** Where a client's calls go, as a review reports it: the base URL's host and the kind of server. */
export interface ProviderIdentity {
  host: string | null;
  profile: string;
}

const OPENAI_HOST = "api.openai.com";

/**
 * The host of the provider base URL (OpenAI's when none is set) and a profile name read from it:
 * `openai`, `azure` for Azure OpenAI hosts, else `openai-compatible` (vLLM, Ollama, LiteLLM, …:
 * the service cannot tell them apart from the URL). Only the host is kept: a URL's path or query
 * could carry a credential.
 */
export function providerIdentity(baseURL: string | undefined): ProviderIdentity {
  let host = OPENAI_HOST;
  if (baseURL) {
    try {
      host = new URL(baseURL).host.toLowerCase();
    } catch {
      return { host: null, profile: "openai-compatible" };
    }
  }
  const hostname = host.replace(/:\d+$/, "");
  if (hostname === OPENAI_HOST) return { host, profile: "openai" };
  if (/\.openai\.azure\.com$|\.cognitiveservices\.azure\.com$/.test(hostname)) return { host, profile: "azure" };
  return { host, profile: "openai-compatible" };
}
