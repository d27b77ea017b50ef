import { promptPapers, type FakeChatRequest, type RespondContext } from "@litrev/llm/testing";
import { loadNagtegaal } from "../support/dataset";

/** Shared inputs of the screening suites and benchmarks. */

export interface Paper {
  id: string;
  title: string;
  abstract: string;
}

/** The 2,019 real records of the Nagtegaal (2019) review as screening papers. */
export function datasetPapers(): Paper[] {
  return loadNagtegaal().map((row) => ({ id: row.record_id, title: row.title, abstract: row.abstract }));
}

/** `n` papers built by repeating the dataset with new ids; `tagTitles` makes every title unique (to trace papers in prompts). */
export function screeningPapers(n: number, options: { tagTitles?: boolean } = {}): Paper[] {
  const base = datasetPapers();
  return Array.from({ length: n }, (_, i) => {
    const row = base[i % base.length]!;
    const id = `p${i + 1}`;
    return { id, title: options.tagTitles ? `${id}: ${row.title}` : row.title, abstract: row.abstract };
  });
}

export const CRITERIA = [
  { name: "Population", type: "include", value: "Healthcare professionals (physicians, nurses, pharmacists)" },
  { name: "Intervention", type: "include", value: "A nudge: a change in choice architecture, defaults, reminders or feedback" },
  { name: "Outcome", type: "include", value: "Behaviour in line with evidence-based medicine" },
  { name: "Design", type: "exclude", value: "Opinion pieces, editorials and protocols without results" },
];

/** Titles of the papers in a labelling or reasoning request, in prompt order (its papers data block). */
export function promptTitles(request: FakeChatRequest): string[] {
  return promptPapers(request).map((p) => p.title);
}

export function schemaNameOf(request: FakeChatRequest): string {
  return request.response_format?.json_schema?.name ?? "";
}

function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Replies that look like a model's: varied votes (by paper and choice), distinct reasons, themes
 * and assignments, all within the request's schema. Used as the fake provider's `respond`.
 */
export function screeningResponder() {
  return (request: FakeChatRequest, context: RespondContext): unknown => {
    const name = schemaNameOf(request);
    const generated = context.generated as Record<string, unknown>;
    if (name.startsWith("screening_labels_")) {
      const papers = promptPapers(request);
      const decisions = (generated.decisions as { id: string; criteria: string[]; include: boolean }[]).map((d, i) => {
        const seed = `${papers[i]?.title ?? i}|${context.choice}`;
        return {
          id: papers[i]?.id ?? d.id,
          criteria: d.criteria.map((_, c) => ["met", "not_met", "unclear"][hash(`${seed}|${c}`) % 3]),
          include: hash(seed) % 100 < 40,
        };
      });
      return { decisions };
    }
    if (name.startsWith("screening_reasons_")) {
      return { reasons: promptPapers(request).map((p) => ({ id: p.id, reason: `Decided on population and intervention for "${p.title.slice(0, 40)}".` })) };
    }
    if (name.startsWith("screening_themes_")) {
      return { themes: [{ label: "Reminders for prescribers", description: "Reminder nudges aimed at prescribing." }, { label: "Audit and feedback", description: "Feedback on performance." }] };
    }
    if (name.startsWith("screening_clusters_")) {
      return { clusters: [{ label: "Reminders for prescribers", description: "Reminder nudges aimed at prescribing." }, { label: "Audit and feedback", description: "Feedback on performance." }] };
    }
    if (name.startsWith("screening_assign_")) {
      const assignments = generated.assignments as { id: string; cluster: number }[];
      const clusters = Number(/x(\d+)$/.exec(name)?.[1] ?? 1);
      return { assignments: assignments.map((a, i) => ({ id: a.id, cluster: 1 + ((context.index + i) % clusters) })) };
    }
    return undefined;
  };
}
