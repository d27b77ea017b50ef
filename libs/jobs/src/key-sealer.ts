// The sealer lives with the messaging layer (every hop that carries a provider key seals it there);
// the job machinery keeps exporting it under its old name.
export { JobKeySecretEnv, KeySealer, keyBindings, MIN_SECRET_LENGTH, SINGLE_SECRET_KID, withJobKeySecrets } from "@litrev/messaging";
export type { KeyBinding, SecretEntry } from "@litrev/messaging";
