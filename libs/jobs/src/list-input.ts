import { ObjectRef, ServiceError } from "@litrev/contracts";
import { confirmedRead, type JobData } from "./data";

/**
 * A job input whose bulk is one list (screening's `papers`, the indexer's `records`), stored as a
 * chunked list (`JobData.putLines`): the head object names the list and holds the input's other
 * fields, the chunks hold the list's items. Workers read the items chunk by chunk; inputs stored
 * whole (one JSON object, before lists were chunked) are read the same way.
 */
export interface ListHead {
  list: string;
  head: Record<string, unknown>;
}

/** Stores `input` with its field `list` as a chunked list under `prefix`. */
export function putListInput(data: JobData, prefix: string, input: Record<string, unknown>, list: string): Promise<ObjectRef> {
  const { [list]: items, ...head } = input;
  if (!Array.isArray(items)) throw new TypeError(`the input's ${list} is not a list`);
  return data.putLines(prefix, { list, head } satisfies ListHead, items);
}

const gone = () => new ServiceError("unknown", "The job's input is no longer available (it expired or was removed)");

/** An admitted job's input exists until it expires: its absence is believed only once confirmed. */
const stored = <T>(read: () => Promise<T | null>): Promise<T> => confirmedRead(read, gone);

/** An input stored whole, as one JSON object. */
const whole = (data: JobData, ref: ObjectRef): Promise<Record<string, unknown>> => stored(() => data.getJson<Record<string, unknown>>(ref.object));

/** The input's fields other than its list, and how many items the list has. */
export async function readListHead(data: JobData, ref: ObjectRef, list: string): Promise<{ head: Record<string, unknown>; count: number }> {
  if (ref.chunks === undefined) {
    const { [list]: items, ...head } = await whole(data, ref);
    return { head, count: Array.isArray(items) ? items.length : 0 };
  }
  const { head } = await stored(() => data.readHead<ListHead>(ref));
  return { head, count: ref.lines ?? 0 };
}

/** How many chunks the input's list has (an input stored whole is one chunk). */
export const listChunks = (ref: ObjectRef): number => ref.chunks ?? 1;

/** Chunk `n` of the input's list. */
export async function readListChunk(data: JobData, ref: ObjectRef, list: string, n: number): Promise<unknown[]> {
  if (ref.chunks !== undefined) return data.readChunk(ref, n);
  const items = (await whole(data, ref))[list];
  return Array.isArray(items) ? items : [];
}

/** The whole input as one value (for small inputs and handlers that need it all at once). */
export async function readWholeInput(data: JobData, ref: ObjectRef): Promise<unknown> {
  if (ref.chunks === undefined) return whole(data, ref);
  const head = await stored(() => data.readHead<ListHead>(ref));
  const items: unknown[] = [];
  for await (const chunk of data.readLines(ref)) for (const item of chunk) items.push(item);
  return { ...head.head, [head.list]: items };
}

/** Names the gateway gives the lists it stages (`jobDataObjects.staged`). */
const STAGED_NAME = /^staged\/[0-9a-f-]{36}$/;

/**
 * The list a job creation says the gateway staged (header `x-litrev-staged-input`), or null when
 * it carries its list inline. The gateway validated the list against the request schema before it
 * staged it; a reference that is malformed, or whose list is empty or longer than `max`, is refused.
 */
export function stagedList(header: string | undefined, max: number): ObjectRef | null {
  if (!header) return null;
  let parsed: ReturnType<typeof ObjectRef.safeParse> | undefined;
  try {
    parsed = ObjectRef.safeParse(JSON.parse(header));
  } catch {
    parsed = undefined;
  }
  const ref = parsed?.success ? parsed.data : undefined;
  if (!ref || !STAGED_NAME.test(ref.object) || ref.chunks === undefined || ref.lines === undefined || ref.lines < 1 || ref.lines > max) {
    throw new ServiceError("validation", "The staged input reference is malformed or its list is out of bounds");
  }
  return ref;
}
