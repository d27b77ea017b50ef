/** A positive number from the environment (a bench's knob), or its default. */
export function knob(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isFinite(value) && value > 0 ? value : fallback;
}
