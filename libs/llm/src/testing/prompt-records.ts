import { readDataBlocks } from "@litrev/contracts";
import type { FakeChatRequest } from "./fake-types";

/** The text of a chat message's content (a string, or text parts). */
export function messageText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("");
  return "";
}

/**
 * The records of the user messages' data blocks (of `kind`, when given), in order: how the fake
 * "reads" the papers, records or values a service sent, as a model would.
 */
export function promptRecords(request: FakeChatRequest, kind?: string): Record<string, unknown>[] {
  // Every user message: a repair request adds one after the data, which must not hide it.
  return request.messages
    .filter((m) => m.role === "user")
    .flatMap((m) => readDataBlocks(messageText(m.content)))
    .filter((block) => kind === undefined || block.kind === kind)
    .flatMap((block) => block.records);
}

/**
 * A generated reply with the ids a model would quote: every array of objects that have an `id`
 * gets the prompt's record ids in order (a schema-driven sample knows no ids). Arrays longer than
 * the prompt's records cycle through them.
 */
export function withPromptIds(value: unknown, ids: readonly string[]): unknown {
  if (ids.length === 0 || value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    const hasIds = value.length > 0 && value.every((item) => item !== null && typeof item === "object" && !Array.isArray(item) && "id" in item);
    if (hasIds) return value.map((item, k) => ({ ...(item as object), id: ids[k % ids.length] }));
    return value.map((item) => withPromptIds(item, ids));
  }
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, withPromptIds(child, ids)]));
}
