import { request as httpRequest } from "node:http";

/**
 * The attacker of test/security/body-flood.test.ts, in its own process (started at the lowest CPU
 * priority, as if on another machine, so its own work does not compete with the gateway it
 * measures): one key streams 99 MB bodies of `[]` values to job creation from several connections
 * for a while, then prints every answer as JSON.
 *
 * Usage: flood-client.ts <base url> <service key> <connections> <attack ms> <min bodies>
 */

const BODY_BYTES = 99 * 1024 * 1024;
const WRITE_BYTES = 1024 * 1024;

export interface Refusal {
  status: number;
  detail: string;
  /** Bytes of the body written when the answer came. */
  sent: number;
}

/** `{"papers":[],"x":[[],[],…]}`, 99 MB. */
function floodBody(): Buffer {
  const head = Buffer.from('{"papers":[],"x":[');
  const tail = Buffer.from("[]]}");
  const body = Buffer.alloc(BODY_BYTES);
  head.copy(body, 0);
  body.fill("[],", head.length, BODY_BYTES - tail.length);
  tail.copy(body, BODY_BYTES - tail.length);
  return body;
}

/**
 * Sends `body` 1 MB at a time, as fast as the socket takes it, until it is answered (Node's client
 * then stops, as curl does): how much had been sent by then shows how early the gateway refused.
 */
function send(baseUrl: string, key: string, body: Buffer): Promise<Refusal> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    const req = httpRequest(`${baseUrl}/v1/screening/jobs`, {
      method: "POST",
      agent: false,
      headers: { "x-api-key": key, "content-type": "application/json", "content-length": String(body.length) },
    });
    req.on("response", (res) => {
      const at = sent;
      let text = "";
      res.on("data", (data: Buffer) => (text += data.toString()));
      res.on("error", reject);
      res.on("end", () => {
        resolve({ status: res.statusCode ?? 0, detail: text, sent: at });
        req.destroy();
      });
    });
    req.on("error", reject);
    const pump = () => {
      while (sent < body.length) {
        const end = Math.min(body.length, sent + WRITE_BYTES);
        const more = req.write(body.subarray(sent, end));
        sent = end;
        if (!more) return void req.once("drain", pump);
      }
      req.end();
    };
    pump();
  });
}

const [baseUrl = "", key = "", connections = "4", attackMs = "3000", minBodies = "12"] = process.argv.slice(2);
const body = floodBody();
const refusals: Refusal[] = [];
const started = Date.now();
await Promise.all(
  Array.from({ length: Number(connections) }, async () => {
    while (Date.now() - started < Number(attackMs) || refusals.length < Number(minBodies)) refusals.push(await send(baseUrl, key, body));
  }),
);
process.stdout.write(JSON.stringify({ refusals, ms: Date.now() - started, bodyBytes: BODY_BYTES }));
