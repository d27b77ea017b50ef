import { artifactJob, readArtifactHead } from "../artifact";
import type { JobData } from "../data";
import type { JsonRecord } from "../store/job-store";

/** Every item of a job's finished artifact (its items' only home), in order; null when it has none. For tests. */
export async function artifactItems(data: JobData, jobId: string): Promise<JsonRecord[] | null> {
  const head = await readArtifactHead(data, jobId);
  if (!head) return null;
  const items: JsonRecord[] = [];
  for await (const chunk of artifactJob(data, head).chunks()) items.push(...chunk);
  return items;
}
