import { bibliographyOf, jobKind, type ItemText, type JobService } from "@litrev/contracts";
import type { JsonRecord } from "./store/job-store";

const NO_TEXT: ItemText = { title: "", abstract: "" };

/**
 * Each finished item's title, abstract and bibliographic fields, looked up in the job's input as the items are written
 * into the artifact. Both services give their results in the input's order (a failed job's finished
 * items are a subsequence of it), so one forward walk over the input, one chunk in memory at a time,
 * finds them all; an id not found ahead of the walk is looked for once from the start (an item out
 * of order), and an id not in the input at all gets empty texts.
 */
export class InputTexts {
  readonly #keys;
  #chunk: JsonRecord[] = [];
  #next = 0;
  #at = 0;

  constructor(
    service: JobService,
    private readonly chunks: number,
    private readonly read: (n: number) => Promise<JsonRecord[]>,
  ) {
    this.#keys = jobKind(service).inputKeys;
  }

  /** The texts of these result items, in their order. */
  async of(items: readonly JsonRecord[]): Promise<ItemText[]> {
    const texts: ItemText[] = [];
    for (const item of items) texts.push(await this.#find(item[this.#keys.id]));
    return texts;
  }

  async #find(id: unknown): Promise<ItemText> {
    const found = (await this.#scan(id)) ?? (await this.#restart(id));
    if (!found) return NO_TEXT;
    const text = (key: string) => (typeof found[key] === "string" ? (found[key] as string) : "");
    const bibliography = bibliographyOf(found);
    return { title: text(this.#keys.title), abstract: text(this.#keys.abstract), ...(bibliography ? { bibliography } : {}) };
  }

  /** Walks forward from where the last item was found; null at the input's end (the walk stays there). */
  async #scan(id: unknown): Promise<JsonRecord | null> {
    for (;;) {
      while (this.#at < this.#chunk.length) {
        const candidate = this.#chunk[this.#at++]!;
        if (candidate[this.#keys.id] === id) return candidate;
      }
      if (this.#next >= this.chunks) return null;
      this.#chunk = await this.read(this.#next++);
      this.#at = 0;
    }
  }

  async #restart(id: unknown): Promise<JsonRecord | null> {
    this.#chunk = [];
    this.#next = 0;
    this.#at = 0;
    return this.#scan(id);
  }
}
