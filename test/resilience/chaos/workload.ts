import type { IndexerField } from "@litrev/contracts";
import { CRITERIA, screeningPapers } from "../../e2e/screening-fixtures";
import { indexerRecords } from "../../support/dataset";
import type { EntryFields, History, JobStatus, Listed, Service } from "./history";
import { unitTag } from "./provider";

/**
 * The chaos workload: per project, several screening clients racing to create the project's job
 * (one wins, the others see 409s and ask active-job) and an indexer client, each following its job
 * by polls until it ends, then starting the next. Every request and every answer is recorded in
 * the history; nothing is retried behind the history's back. Projects are shared out among owners
 * (service keys), each client using its project's owner's key. A creation whose answer was lost
 * (timeout, 5xx, connection error) is followed up by listing its owner's jobs: a listed job no
 * client knows of is followed and read like the others, so a job accepted without its client
 * hearing so is still checked. A lister per owner and service lists jobs all along, and every owner
 * lists once more at the end; the checker holds every listing against the history. Unit ids (`<key>.<n>`, the job's
 * client key and the item number) are the papers' and records' ids and prefix their titles, so
 * results and provider calls can be traced to a job.
 */

export interface WorkloadOptions {
  history: History;
  gatewayUrls: string[];
  projects: number[];
  /** Owners and their service keys; project i belongs to owner i mod the number of owners. */
  owners: { owner: string; key: string }[];
  /** `limit` of every listing. */
  listLimit: number;
  /** Pause between a lister's listings. */
  listEveryMs: number;
  screeningClients: number;
  indexerClients: number;
  papers: number;
  records: number;
  repetitions: number;
  pollMs: number;
  /** A client gives up following one job after this long (the job then counts as lost unless a later read sees it end). */
  jobTimeoutMs: number;
  /** Per-request timeout (an answer that never came is `info`). */
  requestTimeoutMs: number;
  /** Pause between a client's jobs. */
  thinkMs: number;
}

const FIELDS: IndexerField[] = [{ name: "design", description: "Study design", data_type_primary: "text", data_type_secondary: "NA" }];
const TERMINAL = new Set(["completed", "failed"]);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Answer {
  /** The gateway that answered (or was asked): `gateway-<i>`, its place in `gatewayUrls`. */
  via: string;
  http?: number;
  body?: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- the service's JSON, inspected field by field
  error?: string;
}

export class Workload {
  #creating = true;
  #keys = 0;
  #gateway = 0;
  readonly #clients: Promise<void>[] = [];
  readonly #followers = new Map<string, Promise<void>>();
  /** Every job id a client saw (created, or named by a 409): the final reads cover them all. */
  readonly jobs = new Map<string, Service>();
  /** The service key each known job is read with (its owner's). */
  readonly #keyOf = new Map<string, string>();
  accepted = 0;

  constructor(private readonly options: WorkloadOptions) {}

  start(): void {
    const { owners, projects } = this.options;
    projects.forEach((project, p) => {
      const owner = owners[p % owners.length]!;
      for (let i = 0; i < this.options.screeningClients; i++) this.#clients.push(this.#client(`s${project}-${i}`, "screening", project, owner));
      for (let i = 0; i < this.options.indexerClients; i++) this.#clients.push(this.#client(`i${project}-${i}`, "indexer", project, owner));
    });
    for (const owner of owners) for (const service of ["screening", "indexer"] as const) this.#clients.push(this.#lister(service, owner));
  }

  async #lister(service: Service, owner: { owner: string; key: string }): Promise<void> {
    while (this.#creating) {
      await sleep(this.options.listEveryMs);
      await this.#list(`list-${owner.owner}-${service}`, service, owner);
    }
  }

  /**
   * Every owner lists its jobs of both services (an unknown answer retried up to 5 times), and jobs
   * no client knew of are followed to their end. Run after `stop`, so every acknowledged job has ended.
   */
  async finalListings(): Promise<void> {
    await Promise.all(
      this.options.owners.flatMap((owner) =>
        (["screening", "indexer"] as const).map(async (service) => {
          for (let attempt = 0; attempt < 5; attempt++) {
            if (await this.#list(`final-list-${owner.owner}-${service}`, service, owner)) return;
            await sleep(500);
          }
        }),
      ),
    );
    await Promise.all(this.#followers.values());
  }

  /** No new jobs; resolves when every client has followed its current job to its end (or timeout). */
  async stop(): Promise<void> {
    this.#creating = false;
    await Promise.all(this.#clients);
    await Promise.all(this.#followers.values());
  }

  /**
   * Polls every known job that no client saw end until it ends (or `budgetMs` passes): a client
   * gives up following after `jobTimeoutMs`, and on a busy machine a job hit by many faults can
   * outlast it, so the final listings and reads would come while it still runs.
   */
  async settle(budgetMs = 180_000): Promise<void> {
    const deadline = Date.now() + budgetMs;
    await Promise.all(
      [...this.jobs].map(async ([job, service]) => {
        while (Date.now() < deadline) {
          const seen = await this.#poll(`settle-${job}`, service, job, "poll");
          if (seen === "terminal" || seen === "absent") return;
          await sleep(1_000);
        }
      }),
    );
  }

  /**
   * Reads every known job `times` times, `gapMs` apart; an unknown answer (5xx, timeout) is retried
   * (each attempt recorded) up to 5 times while `budgetMs` lasts.
   */
  async finalReads(times = 2, gapMs = 1_000, budgetMs = 60_000): Promise<void> {
    const ids = [...this.jobs];
    const deadline = Date.now() + budgetMs;
    for (let round = 0; round < times; round++) {
      if (round > 0) await sleep(gapMs);
      for (let i = 0; i < ids.length; i += 16) {
        await Promise.all(
          ids.slice(i, i + 16).map(async ([job, service]) => {
            for (let attempt = 0; attempt < 5 && Date.now() < deadline; attempt++) {
              if ((await this.#poll(`final-${job}`, service, job, "read")) !== "unknown") return;
              await sleep(500);
            }
          }),
        );
      }
    }
  }

  async #request(key: string, method: string, path: string, body?: unknown): Promise<Answer> {
    const urls = this.options.gatewayUrls;
    const index = this.#gateway++ % urls.length;
    const base = urls[index]!;
    const via = `gateway-${index}`;
    try {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.options.requestTimeoutMs),
      });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        // keep the text
      }
      return { via, http: response.status, body: parsed };
    } catch (error) {
      // The cause's code (ECONNREFUSED, UND_ERR_SOCKET, …), else its message, else the error's own.
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (error as Error).message;
      return { via, error: `${(error as Error).name}${why ? ` ${why.slice(0, 120)}` : ""}` };
    }
  }

  #input(service: Service, key: string, project: number) {
    const { papers, records, repetitions } = this.options;
    if (service === "screening") {
      const list = screeningPapers(papers).map((p, i) => ({ id: `${key}.${i + 1}`, title: unitTag(`${key}.${i + 1}`, p.title), abstract: p.abstract }));
      return { units: list.map((p) => p.id), body: { papers: list, criteria: CRITERIA, repetitions, project_id: project } };
    }
    const list = indexerRecords(records, { withAbstractOnly: true }).map((r, i) => ({ ID: `${key}.${i + 1}`, Title: unitTag(`${key}.${i + 1}`, r.Title), Abstract: r.Abstract }));
    return { units: list.map((r) => r.ID), body: { records: list, fields: FIELDS, project_id: project } };
  }

  async #client(process: string, service: Service, project: number, owner: { owner: string; key: string }): Promise<void> {
    const { history } = this.options;
    while (this.#creating) {
      const key = `${service[0]}${++this.#keys}`;
      const { units, body } = this.#input(service, key, project);
      const complete = history.invoke(process, { f: "create", service, project, key, units, owner: owner.owner });
      const res = await this.#request(owner.key, "POST", `/v1/${service}/jobs`, body);
      if (res.http === 200 && typeof res.body?.job_id === "string") {
        const job = res.body.job_id as string;
        complete("ok", { via: res.via, http: 200, job, status: res.body.status as JobStatus, progress: res.body.progress as number });
        this.accepted++;
        this.jobs.set(job, service);
        await this.#follow(process, service, project, job, owner.key);
        await sleep(this.options.thinkMs);
      } else if (res.http === 409) {
        const detail = typeof res.body?.detail === "string" ? res.body.detail : JSON.stringify(res.body?.detail);
        const named = /job_id ([0-9a-f-]{36})/.exec(detail)?.[1];
        complete("fail", { via: res.via, http: 409, ...(named ? { named } : {}), error: detail.slice(0, 200) });
        if (named && !this.jobs.has(named)) this.#adopt(service, project, named, owner.key);
        await this.#active(process, service, project, owner.key);
        await sleep(300 + Math.random() * 300);
      } else {
        // 4xx other than 409: the request was refused (fail); 5xx or no answer: unknown (info).
        const definite = res.http !== undefined && res.http >= 400 && res.http < 500;
        complete(definite ? "fail" : "info", { via: res.via, ...(res.http ? { http: res.http } : {}), error: res.error ?? JSON.stringify(res.body).slice(0, 200) });
        // The job may exist all the same: its owner's listing tells (and the final listings, if it is not there yet).
        if (!definite) await this.#list(process, service, owner);
        await sleep(500);
      }
    }
  }

  /**
   * A job named by a 409 or an active-job answer that no client was told about: followed like the
   * others, unless its creator's 200 was merely still on its way (checked after a moment).
   */
  #adopt(service: Service, project: number | undefined, job: string, apiKey: string): void {
    if (this.#followers.has(job)) return;
    this.#followers.set(
      job,
      sleep(2_000).then(() => {
        if (this.jobs.has(job)) return;
        this.jobs.set(job, service);
        this.#keyOf.set(job, apiKey);
        return this.#follow(`adopt-${job}`, service, project, job, apiKey);
      }),
    );
  }

  /** Lists the owner's jobs of `service`; adopts those no client knows of. False when the answer was unknown. */
  async #list(process: string, service: Service, owner: { owner: string; key: string }): Promise<boolean> {
    const { listLimit } = this.options;
    const complete = this.options.history.invoke(process, { f: "list", service, owner: owner.owner, limit: listLimit });
    const res = await this.#request(owner.key, "GET", `/v1/${service}/jobs?limit=${listLimit}`);
    if (res.http === 200 && Array.isArray(res.body)) {
      const listed: Listed[] = (res.body as { job_id: string; status: JobStatus; project_id?: number | null; created_at: string }[]).map((item) => ({
        job: item.job_id,
        status: item.status,
        ...(item.project_id !== undefined ? { project: item.project_id } : {}),
        created: Date.parse(item.created_at),
      }));
      complete("ok", { via: res.via, http: 200, listed });
      for (const item of listed) {
        if (this.jobs.has(item.job) || this.#followers.has(item.job)) continue;
        this.#adopt(service, item.project ?? undefined, item.job, owner.key);
      }
      return true;
    }
    complete(res.http && res.http < 500 ? "fail" : "info", { via: res.via, ...(res.http ? { http: res.http } : {}), error: res.error ?? JSON.stringify(res.body).slice(0, 200) });
    return false;
  }

  async #follow(process: string, service: Service, project: number | undefined, job: string, apiKey: string): Promise<void> {
    this.#keyOf.set(job, apiKey);
    const deadline = Date.now() + this.options.jobTimeoutMs;
    for (let i = 0; Date.now() < deadline; i++) {
      const seen = await this.#poll(process, service, job, "poll");
      if (seen === "terminal") return;
      if (service === "screening" && project !== undefined && i % 4 === 3) await this.#active(process, service, project, apiKey);
      await sleep(this.options.pollMs);
    }
  }

  async #poll(process: string, service: Service, job: string, f: "poll" | "read"): Promise<"terminal" | "active" | "absent" | "unknown"> {
    const complete = this.options.history.invoke(process, { f, service, job });
    const res = await this.#request(this.#keyOf.get(job) ?? this.options.owners[0]!.key, "GET", `/v1/${service}/jobs/${job}`);
    if (res.http === 200 && typeof res.body?.status === "string") {
      const status = res.body.status as JobStatus;
      const fields: Partial<EntryFields> = { via: res.via, http: 200, status, progress: res.body.progress };
      if (TERMINAL.has(status)) {
        const items = (service === "screening" ? res.body.results : res.body.partial_results) as { id?: string; ID?: string }[] | null;
        if (status === "completed" || items) fields.results = (items ?? []).map((item) => String(item.id ?? item.ID));
        if (status === "failed") fields.error = res.body.error_category ?? "unknown";
      }
      complete("ok", fields);
      return TERMINAL.has(status) ? "terminal" : "active";
    }
    if (res.http === 404) {
      complete("fail", { via: res.via, http: 404 });
      return "absent";
    }
    complete("info", { via: res.via, ...(res.http ? { http: res.http } : {}), error: res.error ?? JSON.stringify(res.body).slice(0, 200) });
    return "unknown";
  }

  async #active(process: string, service: Service, project: number, apiKey: string): Promise<void> {
    if (service !== "screening") return;
    const complete = this.options.history.invoke(process, { f: "active", service, project });
    const res = await this.#request(apiKey, "GET", `/v1/screening/active-job?project_id=${project}`);
    if (res.http === 200) {
      const job = res.body && typeof res.body.job_id === "string" ? (res.body.job_id as string) : undefined;
      complete("ok", { via: res.via, http: 200, ...(job ? { job, status: res.body.status as JobStatus } : {}) });
      if (job && !this.jobs.has(job)) this.#adopt(service, project, job, apiKey);
    } else complete(res.http && res.http < 500 ? "fail" : "info", { via: res.via, ...(res.http ? { http: res.http } : {}), error: res.error ?? String(res.http) });
  }
}
