import { z } from "zod";
import { createLitrevClient, type LitrevClient, type paths } from "@litrev/client";
import { Provenance } from "@litrev/contracts";

/**
 * Every HTTP call the harness makes, in one place, through the typed client generated from the
 * gateway's OpenAPI document (`clients/typescript`): a drift between the document and the gateway
 * breaks the harness's own test. It talks to the public API exactly as a client application does.
 */

type CreateJobBody = paths["/v1/screening/jobs"]["post"]["requestBody"]["content"]["application/json"];

export interface ApiOptions {
  /** The gateway, e.g. http://localhost:8000 (with or without /v1). */
  baseUrl: string;
  /** Service key, sent as X-API-Key. */
  apiKey: string;
  /** The team's own provider key, sent as X-LLM-API-Key (otherwise the server's key is used). */
  providerKey?: string | undefined;
  /** Per-request time limit. */
  requestTimeoutMs?: number;
}

/** Fields of the poll response the harness reads; anything else is kept as the service sent it. */
export const ScreeningJobView = z.looseObject({
  job_id: z.string(),
  status: z.enum(["pending", "running", "completed", "failed"]),
  progress: z.number(),
  stage: z.string(),
  results: z.array(z.looseObject({ id: z.union([z.string(), z.number()]), final_score: z.number().nullable() })).nullable(),
  error: z.string().nullable().optional(),
  error_category: z.string().nullable().optional(),
  config: z.record(z.string(), z.unknown()).default({}),
  stage_timings: z.record(z.string(), z.number().nullable()).default({}),
  duration_ms: z.number().nullable().optional(),
  estimated_cost_usd: z.number().nullable().optional(),
  /** Recorded by services that keep it (issue 19); absent on older ones. */
  actual_cost_usd: z.number().nullable().optional(),
  model_version: z.string().optional(),
  /** What the job recorded about its model, code and prompts; null when absent or in a shape this version cannot read. */
  provenance: z
    .unknown()
    .optional()
    .transform((value) => Provenance.safeParse(value).data ?? null),
});
export type ScreeningJobView = z.infer<typeof ScreeningJobView>;

export class ApiError extends Error {
  override readonly name = "ApiError";
  constructor(
    /** 0 when no HTTP answer came (connection refused or reset, time-out). */
    readonly status: number,
    readonly body: unknown,
    what: string,
  ) {
    super(status === 0 ? `${what}: ${String(body)}` : `${what}: HTTP ${status} ${JSON.stringify(body).slice(0, 500)}`);
  }
  /** Worth another try: overload, rate limit, a restarting gateway. */
  get transient(): boolean {
    return this.status === 0 || this.status === 429 || this.status === 502 || this.status === 503 || this.status === 504;
  }
}

export class ScreeningApi {
  readonly #base: string;
  readonly #client: LitrevClient;

  constructor(private readonly options: ApiOptions) {
    this.#base = options.baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
    this.#client = createLitrevClient({
      baseUrl: this.#base,
      apiKey: options.apiKey,
      ...(options.providerKey ? { providerKey: options.providerKey } : {}),
    });
  }

  /** POST /v1/screening/jobs → the new job's id. */
  async createJob(request: CreateJobBody): Promise<string> {
    const body = await this.#call("creating the screening job", (signal) => this.#client.POST("/v1/screening/jobs", { body: request, signal }));
    return z.object({ job_id: z.string() }).parse(body).job_id;
  }

  /** GET /v1/screening/jobs/{id}. */
  async getJob(jobId: string): Promise<ScreeningJobView> {
    const body = await this.#call("polling the screening job", (signal) =>
      this.#client.GET("/v1/screening/jobs/{job_id}", { params: { path: { job_id: jobId } }, signal }),
    );
    return ScreeningJobView.parse(body);
  }

  /**
   * Polls until the job is completed or failed. The first terminal poll carries the results (a
   * service without persistence forgets a finished job after that poll), so it is the one returned.
   * Transient errors (no answer, 429, 502–504) are retried with backoff until `timeoutMs`.
   */
  async waitForJob(jobId: string, opts: { timeoutMs: number; intervalMs?: number; onProgress?: (job: ScreeningJobView) => void }): Promise<ScreeningJobView> {
    const deadline = Date.now() + opts.timeoutMs;
    let interval = opts.intervalMs ?? 500;
    for (;;) {
      try {
        const job = await this.getJob(jobId);
        opts.onProgress?.(job);
        if (job.status === "completed" || job.status === "failed") return job;
        interval = Math.min(5_000, interval * 1.25);
      } catch (error) {
        if (!(error instanceof ApiError && error.transient)) throw error;
        interval = Math.min(10_000, interval * 2);
      }
      if (Date.now() + interval > deadline) throw new Error(`job ${jobId} did not finish within ${Math.round(opts.timeoutMs / 1000)} s`);
      await new Promise((resolve) => setTimeout(resolve, interval));
    }
  }

  async #call(what: string, request: (signal: AbortSignal) => Promise<{ data?: unknown; error?: unknown; response: Response }>): Promise<unknown> {
    let answer: Awaited<ReturnType<typeof request>>;
    try {
      answer = await request(AbortSignal.timeout(this.options.requestTimeoutMs ?? 120_000));
    } catch (error) {
      const cause = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
      throw new ApiError(0, `no answer from ${this.#base} (${cause})`, what);
    }
    if (!answer.response.ok) throw new ApiError(answer.response.status, answer.error, what);
    return answer.data;
  }
}
