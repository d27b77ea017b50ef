import { SAMPLE_MARK_FIELDS, type JobKindTable, type SampleMembership } from "@litrev/contracts";

/**
 * An export's marks for one validation sample (`sample=<sample_id>`): which papers were sampled and
 * the human label of each one labelled. Held whole while the export streams: a sample has at most
 * MAX_VALIDATION_SAMPLE papers. Ids are compared as text, as the service matches labels to papers.
 */
export interface SampleMarks {
  sampleId: string;
  /** Sampled paper id → its label (true: include), or null while it is not labelled. */
  labels: ReadonlyMap<string, boolean | null>;
}

export function sampleMarksOf(sample: SampleMembership["sample"]): SampleMarks {
  const labels = new Map<string, boolean | null>(sample.paper_ids.map((id) => [String(id), null]));
  for (const label of sample.labels) labels.set(String(label.id), label.included);
  return { sampleId: sample.sample_id, labels };
}

type KindExport = JobKindTable["export"];

/**
 * A kind's export layout with the marks added: two last CSV columns and JSON Lines fields on every
 * item, and for a sampled paper a `KW` to filter on and an `N1` to read in RIS, beside the ones that
 * carry the screening decision (docs/reporting.md).
 */
export function markedExport(kind: KindExport, idKey: string, marks: SampleMarks): KindExport {
  const markOf = (item: Record<string, unknown>) => {
    const key = String(item[idKey] ?? "");
    const label = marks.labels.get(key);
    return { sampled: label !== undefined, label: label === undefined || label === null ? null : label ? "include" : "exclude" };
  };
  return {
    ...kind,
    table(record, result, sample) {
      const table = kind.table(record, result, sample);
      return {
        header: [...table.header, SAMPLE_MARK_FIELDS.sampled, SAMPLE_MARK_FIELDS.label],
        row: (item) => {
          const mark = markOf(item);
          return [...table.row(item), mark.sampled, mark.label];
        },
      };
    },
    line(result) {
      const line = kind.line(result);
      return (item) => {
        const mark = markOf(item);
        return { ...line(item), [SAMPLE_MARK_FIELDS.sampled]: mark.sampled, [SAMPLE_MARK_FIELDS.label]: mark.label };
      };
    },
    ris(record, result) {
      const tags = kind.ris(record, result);
      return (item) => {
        const { keywords, notes } = tags(item);
        const mark = markOf(item);
        if (!mark.sampled) return { keywords, notes };
        return {
          keywords: [...keywords, "litrev validation: sampled", ...(mark.label ? [`litrev validation label: ${mark.label}`] : [])],
          notes: [...notes, `litrev validation sample ${marks.sampleId}: sampled; ${mark.label ? `human label: ${mark.label}` : "not labelled yet"}.`],
        };
      };
    },
  };
}
