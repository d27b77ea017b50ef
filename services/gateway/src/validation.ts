import type { FastifyBaseLogger, FastifyInstance, FastifySchemaCompiler, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { parseOrIssues, ServiceError } from "@litrev/contracts";
import type { z } from "zod";

const ROOT: Record<string, string> = { body: "body", querystring: "query", params: "path", headers: "header" };

/** Bodies the parser thread already held to the limits and validated (`off-loop-parse.ts`): not validated twice. */
export const validatedOffLoop = new WeakSet<object>();

/**
 * Validates each request part with its zod schema and fails with the spec's field-level body.
 * The error is a ServiceError, so the one error handler renders it like every other error.
 */
export const zodValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  const root = ROOT[httpPart ?? "body"] ?? "body";
  return (data: unknown) => {
    if (root === "body" && typeof data === "object" && data !== null && validatedOffLoop.has(data)) return { value: data };
    // A POST without a body reaches the validator as undefined or null: report the body missing.
    const result = parseOrIssues(schema, data ?? undefined, root);
    if (result.success) return { value: result.data };
    return { error: new ServiceError("validation", "Request validation failed", { issues: result.issues }) };
  };
};

/** Responses are produced by services that already validated them: plain, fast stringify. */
export const jsonSerializerCompiler = () => (data: unknown) => JSON.stringify(data);

/** The gateway's routes under the zod type provider: request parts are typed by their route's schemas. */
export type ZodApp = FastifyInstance<RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression, FastifyBaseLogger, ZodTypeProvider>;
