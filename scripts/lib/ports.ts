import { once } from "node:events";
import { createServer } from "node:net";

/**
 * Whether a port can be listened on, tried the way the process that needs it will listen: `npm start`
 * checks PORT and NATS_PORT with it before starting anything, so a taken port is one clear line
 * instead of a process that crash-loops on EADDRINUSE.
 */
export async function portProblem(port: number, host: string): Promise<string | undefined> {
  const server = createServer();
  try {
    server.listen({ port, host, exclusive: true });
    await once(server, "listening");
    return undefined;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EADDRINUSE") return `port ${port} on ${host} is already in use`;
    if (code === "EACCES") return `port ${port} on ${host} needs privileges this user does not have`;
    if (code === "EADDRNOTAVAIL") return `${host} is not an address of this machine (port ${port})`;
    return `port ${port} on ${host} cannot be listened on (${code ?? (error as Error).message})`;
  } finally {
    if (server.listening) {
      server.close();
      await once(server, "close");
    }
  }
}

/** A TCP port number from an environment variable (`fallback` when unset or empty), or a line saying what is wrong. */
export function portFromEnv(name: string, value: string | undefined, fallback: number): number | string {
  if (value === undefined || value === "") return fallback;
  const port = Number(value);
  return Number.isInteger(port) && port >= 1 && port <= 65_535 ? port : `${name} must be a port number from 1 to 65535, got ${JSON.stringify(value)}`;
}
