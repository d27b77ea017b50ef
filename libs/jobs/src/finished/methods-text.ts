import { jobKind, type ChecklistRow, type JobReport, type ReportCertificate } from "@litrev/contracts";

/**
 * The parts of a methods report a team pastes: a methods paragraph written from the job, and the
 * RAISE / PRISMA-trAIce reporting items answered where the job knows. Made when the report is read,
 * because the latest recall certificate comes later than the job's artifact. What only the team
 * knows is left as a placeholder in braces in the paragraph (braces, unlike brackets, need no
 * escape in Markdown, so the paragraph pastes as it reads) and as a null answer in the checklist
 * ("for you to fill in"); the service never guesses it.
 */

/** A sampling setting the service did not send: the provider used its own default. */
export const NOT_SENT = "not sent (provider default)";

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** Where the titles and abstracts went, as the end of a clause ("… using the model X through …"). */
function viaText(report: JobReport): string {
  if (report.mock) return ", and no text left the service";
  const host = report.model.provider?.host;
  return ` through ${host ? `the provider at ${host}` : "a provider not recorded by this job"}`;
}

/** Each stage's sampling settings in words, "not sent (provider default)" where nothing was sent. */
export function settingsText(report: JobReport): string | null {
  if (report.parameters === null) return null;
  const stages = Object.entries(report.parameters);
  if (stages.length === 0) return "none (no model was called)";
  const value = (v: string | number | null) => (v === null ? NOT_SENT : String(v));
  return stages
    .map(([stage, p]) => `${stage}: temperature ${value(p.temperature)}, max output tokens ${value(p.max_output_tokens)}, reasoning effort ${value(p.reasoning_effort)}`)
    .join("; ");
}

function modelText(report: JobReport): string {
  if (report.mock) return "the service's deterministic mock (no language model)";
  const resolved = report.model.resolved ?? report.model.requested;
  const reported = report.model.reported?.map((m) => m.model).filter((m) => m !== resolved) ?? [];
  const notes = [...(report.model.requested !== resolved ? [`requested as ${report.model.requested}`] : []), ...(reported.length > 0 ? [`reported by the provider as ${reported.join(", ")}`] : [])];
  return `the model ${resolved}${notes.length > 0 ? ` (${notes.join("; ")})` : ""}`;
}

function toolText(report: JobReport): string {
  return `${report.tool.name}${report.tool.version ? ` version ${report.tool.version}` : ""}${report.tool.commit ? ` (commit ${report.tool.commit})` : ""}`;
}

/** Ends the text with a full stop unless it has one. */
const sentence = (text: string) => (/[.!?]$/.test(text.trim()) ? text.trim() : `${text.trim()}.`);

const day = (timestamp: string | null) => (timestamp ? timestamp.slice(0, 10) : null);

/** When the certificate's labels were analysed, as a clause: the plan the team chose before labelling. */
export function lookText(c: Pick<ReportCertificate, "plan">): string {
  return c.plan === "once"
    ? "analysed once, after its last label, as planned before labelling"
    : "analysed as the labels arrived (an anytime-valid certificate: it holds at whichever look the team stopped)";
}

/** The certificate's result in words: the certified threshold and bound, not certified, or labelling still under way. */
export function certificateResult(c: ReportCertificate, recallWords = "recall was at least"): string {
  if (c.look === "progress") return `labelling was under way (${c.labelled} of ${c.sample_size} papers); the single planned look comes after the last label`;
  return c.threshold === null ? "the target was not certified" : `at threshold ${c.threshold}, ${recallWords} ${(c.recall_lower! * 100).toFixed(1)}%`;
}

/**
 * The certificate in sentences: the sample, when it was analysed and its result, then the method as
 * its own sentences (never in brackets: it holds sentences and brackets of its own). The method
 * usually ends with the certificate's claim; the claim is written once either way.
 */
function certificateText(c: ReportCertificate): string {
  const method = sentence(c.method);
  const claim = method.includes(c.statement.trim()) ? "" : ` ${sentence(c.statement)}`;
  return `On a ${c.design} validation sample of ${c.sample_size} papers drawn at random by the service (${c.labelled} labelled by the team, ${c.labelled_included} of them included), ${lookText(c)}, ${certificateResult(c)}.${claim} ${method}`;
}

/** The methods paragraph: what was done, with which tool and model, on what, with what outcome. */
export function methodsParagraph(report: JobReport): string {
  const kind = jobKind(report.kind).report;
  const when = String(day(report.completed_at) ?? day(report.created_at));
  const tool = `${toolText(report)}, using ${modelText(report)}${viaText(report)}`;
  const sentences = kind.methods(report, { when, tool, settings: settingsText(report) ?? "", plural, sentence });
  if (report.status !== "completed") sentences.push(`The job did not complete (${report.error ?? report.status}); the figures above cover the items that finished.`);
  if (report.recall_certificate) sentences.push(certificateText(report.recall_certificate));
  else if (kind.unvalidated) sentences.push(kind.unvalidated);
  sentences.push("{For you to fill in: the model's role in the review — sole screener, second reviewer beside a human, or triage — and how disagreements were resolved.}");
  sentences.push("The full prompts as sent, with their SHA-256 hashes, are given in the appendix.");
  return sentences.join(" ");
}

/**
 * The reporting items of RAISE (Responsible AI in Evidence Synthesis) and PRISMA-trAIce (the PRISMA
 * extension for AI use), in our words, merged where both ask the same: the job's answer, or null.
 */
export function checklist(report: JobReport): ChecklistRow[] {
  const both: ChecklistRow["guidelines"] = ["RAISE", "PRISMA-trAIce"];
  const settings = settingsText(report);
  const p = report.prisma;
  const rows: ChecklistRow[] = [
    { guidelines: both, item: "AI tool: name, version and developer", answer: toolText(report) },
    { guidelines: both, item: "Model used, as run (name and version)", answer: report.mock ? "none (mock job)" : `${report.model.resolved ?? report.model.requested}${report.model.reported?.length ? `; reported by the provider: ${report.model.reported.map((m) => `${m.model} (${m.calls} calls)`).join(", ")}` : ""}` },
    { guidelines: ["PRISMA-trAIce"], item: "Review stage and task the AI performed", answer: report.task },
    { guidelines: both, item: "Role of the AI (sole screener, second reviewer, triage) and human oversight", answer: null },
    { guidelines: ["RAISE"], item: "Justification for using AI in this review", answer: null },
    { guidelines: both, item: "Input given to the AI and where it was sent", answer: `${p ? plural(p.records_in, "record", "records") : "records"} (titles and abstracts)${report.mock ? ": none sent anywhere (mock job)" : ` sent${viaText(report)}`}` },
    { guidelines: both, item: "Prompts (full text) and instructions", answer: report.prompts === null ? null : report.prompts.length === 0 ? "none (mock job)" : `${plural(report.prompts.length, "prompt", "prompts")}, full text and SHA-256 in the appendix` },
    { guidelines: ["PRISMA-trAIce"], item: "Settings (sampling parameters, repetitions, threshold, decision rule)", answer: [settings, report.repetitions !== null ? `${report.repetitions} repetitions` : null, report.threshold !== null ? `threshold ${report.threshold}` : null, report.decision_rule].filter(Boolean).join("; ") || null },
    { guidelines: ["PRISMA-trAIce"], item: "Dates of use", answer: `${report.created_at} to ${report.completed_at ?? "not completed"}` },
    { guidelines: both, item: "Evaluation of the AI's performance (e.g. recall on a validation sample)", answer: report.recall_certificate ? certificateText(report.recall_certificate) : null },
    { guidelines: ["PRISMA-trAIce"], item: "Numbers of records processed, included, excluded and not decided by the AI", answer: p ? prismaText(p) : null },
    { guidelines: ["RAISE"], item: "Cost and resources", answer: report.mock ? "none (mock job)" : report.actual_cost_usd !== null ? `$${report.actual_cost_usd.toFixed(4)} provider cost` : null },
    { guidelines: both, item: "Limitations of the AI method", answer: "listed under Known limitations" },
    { guidelines: ["RAISE"], item: "Conflicts of interest and funding related to the AI tool", answer: null },
    { guidelines: ["PRISMA-trAIce"], item: "Availability of prompts, settings and outputs", answer: "prompts and settings in this report; outputs exportable as CSV, JSON Lines and RIS" },
  ];
  return rows;
}

function prismaText(p: NonNullable<JobReport["prisma"]>): string {
  const decided = p.included !== null ? `, ${p.included} included, ${p.excluded} excluded` : "";
  const identified = p.records_identified !== undefined ? `${p.records_identified} identified, ${p.duplicates_removed ?? 0} duplicates removed, ` : "";
  return `${identified}${p.records_in} in, ${p.results} with a result${decided}, ${p.errored} errored${p.without_abstract !== null ? `, ${p.without_abstract} without abstract` : ""}`;
}

/** The report as read: the written report, the job's latest certificate, the paragraph and the checklist. */
export function completeReport(written: JobReport, certificate: ReportCertificate | null): JobReport {
  const report = { ...written, recall_certificate: certificate };
  return { ...report, methods_paragraph: methodsParagraph(report), checklist: checklist(report) };
}
