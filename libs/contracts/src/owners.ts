/** Client owner id of jobs created before jobs had owners, and of every key in `API_KEY`. */
export const DEFAULT_JOB_OWNER = "default";
/** Owner ids are key ids (docs/security.md): safe as a header value, a key token or a subject token. */
export const OWNER_ID = /^[A-Za-z0-9_-]{1,64}$/;
