import { z } from "zod";
import { WireError } from "./errors";

/** Every request-reply answer is one of these, so an error never masquerades as data. */
export const ReplyEnvelope = z.discriminatedUnion("ok", [
  z.object({ ok: z.literal(true), data: z.unknown() }),
  z.object({ ok: z.literal(false), error: WireError }),
]);
export type ReplyEnvelope = z.infer<typeof ReplyEnvelope>;
