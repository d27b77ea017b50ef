import type { CurvePoint } from "@litrev/evaluation";

export interface PlotInput {
  title: string;
  subtitle: string;
  curve: CurvePoint[];
  targetRecall: number;
  /** The threshold the report recommends (highlighted), if any. */
  chosenVotes: number | null;
  repetitions: number;
}

const W = 720;
const H = 520;
const M = { left: 78, right: 24, top: 70, bottom: 64 };
const PW = W - M.left - M.right;
const PH = H - M.top - M.bottom;
const FONT = "font-family=\"Helvetica, Arial, sans-serif\"";

const x = (share: number) => M.left + share * PW;
const y = (recall: number) => M.top + (1 - recall) * PH;
const fmt = (n: number) => n.toFixed(1);
const pct = (n: number) => `${Math.round(n * 100)}%`;

/**
 * Recall against the share of papers a human still reads, as a self-contained SVG (no scripts,
 * fonts or external references): the screener's curve with each vote threshold marked, random
 * screening as the diagonal for comparison, and the target recall as a dashed line.
 */
export function recallWorkloadSvg(input: PlotInput): string {
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img">`);
  parts.push(`<title>${escape(input.title)}</title>`);
  parts.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  parts.push(`<text x="${W / 2}" y="28" text-anchor="middle" ${FONT} font-size="18" font-weight="bold" fill="#111">${escape(input.title)}</text>`);
  parts.push(`<text x="${W / 2}" y="50" text-anchor="middle" ${FONT} font-size="13" fill="#444">${escape(input.subtitle)}</text>`);

  // Grid and ticks every 10%.
  for (let i = 0; i <= 10; i++) {
    const v = i / 10;
    const major = i % 5 === 0;
    parts.push(`<line x1="${fmt(x(v))}" y1="${M.top}" x2="${fmt(x(v))}" y2="${M.top + PH}" stroke="${major ? "#d0d0d0" : "#ececec"}" stroke-width="1"/>`);
    parts.push(`<line x1="${M.left}" y1="${fmt(y(v))}" x2="${M.left + PW}" y2="${fmt(y(v))}" stroke="${major ? "#d0d0d0" : "#ececec"}" stroke-width="1"/>`);
    parts.push(`<text x="${fmt(x(v))}" y="${M.top + PH + 18}" text-anchor="middle" ${FONT} font-size="12" fill="#333">${pct(v)}</text>`);
    parts.push(`<text x="${M.left - 8}" y="${fmt(y(v) + 4)}" text-anchor="end" ${FONT} font-size="12" fill="#333">${pct(v)}</text>`);
  }
  parts.push(`<rect x="${M.left}" y="${M.top}" width="${PW}" height="${PH}" fill="none" stroke="#555" stroke-width="1.2"/>`);
  parts.push(`<text x="${M.left + PW / 2}" y="${H - 18}" text-anchor="middle" ${FONT} font-size="14" fill="#111">Share of papers a human still has to read</text>`);
  parts.push(
    `<text transform="translate(22 ${M.top + PH / 2}) rotate(-90)" text-anchor="middle" ${FONT} font-size="14" fill="#111">Recall (share of included studies kept)</text>`,
  );

  // Random screening: reading a share s of the papers finds a share s of the inclusions.
  parts.push(`<line x1="${x(0)}" y1="${y(0)}" x2="${x(1)}" y2="${y(1)}" stroke="#999" stroke-width="1.5" stroke-dasharray="6 5"/>`);
  // Target recall.
  parts.push(`<line x1="${M.left}" y1="${fmt(y(input.targetRecall))}" x2="${M.left + PW}" y2="${fmt(y(input.targetRecall))}" stroke="#c0392b" stroke-width="1.5" stroke-dasharray="2 4"/>`);

  const points = input.curve;
  if (points.length > 1) {
    const path = points.map((p, i) => `${i === 0 ? "M" : "L"}${fmt(x(p.workload))} ${fmt(y(p.recall))}`).join(" ");
    parts.push(`<path d="${path}" fill="none" stroke="#1f5fae" stroke-width="2.5" stroke-linejoin="round"/>`);
    let previous: { px: number; ly: number } | undefined;
    for (const p of points) {
      if (p.votes === null) continue;
      const px = x(p.workload);
      const py = y(p.recall);
      const chosen = p.votes === input.chosenVotes;
      if (chosen) parts.push(`<circle cx="${fmt(px)}" cy="${fmt(py)}" r="10" fill="none" stroke="#c0392b" stroke-width="2.5"/>`);
      parts.push(`<circle cx="${fmt(px)}" cy="${fmt(py)}" r="4.5" fill="#1f5fae" stroke="#fff" stroke-width="1.5"/>`);
      // Labels sit right of the point (left of it near the right edge), below it near the top so
      // they clear the frame and the target line, nudged further when the previous one is close.
      const nearTop = py < M.top + 40;
      let ly = nearTop ? py + 36 : py + 18;
      if (previous && Math.abs(previous.px - px) < 46 && Math.abs(previous.ly - ly) < 16) ly += 16;
      ly = Math.min(M.top + PH - 6, ly);
      const right = px > M.left + PW - 60;
      const label = p.votes === 0 ? "≥0 (read all)" : `≥${p.votes}`;
      parts.push(`<text x="${fmt(right ? px - 8 : px + 8)}" y="${fmt(ly)}" text-anchor="${right ? "end" : "start"}" ${FONT} font-size="12" fill="#1f5fae" stroke="#fff" stroke-width="3" paint-order="stroke">${label}</text>`);
      previous = { px, ly };
    }
  }

  // Legend, bottom right inside the plot (the curve runs along the top-left there is room below it).
  const lx = M.left + PW - 268;
  const ly = M.top + PH - 112;
  parts.push(`<rect x="${lx}" y="${ly}" width="258" height="100" rx="4" fill="#ffffff" fill-opacity="0.92" stroke="#bbb"/>`);
  const entry = (row: number, mark: string, text: string) => {
    const cy = ly + 20 + row * 22;
    parts.push(mark.replace(/CY/g, String(cy)).replace(/LX/g, String(lx + 12)).replace(/RX/g, String(lx + 42)));
    parts.push(`<text x="${lx + 52}" y="${cy + 4}" ${FONT} font-size="12" fill="#111">${escape(text)}</text>`);
  };
  entry(0, `<line x1="LX" y1="CY" x2="RX" y2="CY" stroke="#1f5fae" stroke-width="2.5"/>`, `Screener: include at ≥t of ${input.repetitions} votes`);
  entry(1, `<line x1="LX" y1="CY" x2="RX" y2="CY" stroke="#999" stroke-width="1.5" stroke-dasharray="6 5"/>`, "Random order (no screener)");
  entry(2, `<line x1="LX" y1="CY" x2="RX" y2="CY" stroke="#c0392b" stroke-width="1.5" stroke-dasharray="2 4"/>`, `Target recall ${pct(input.targetRecall)}`);
  entry(
    3,
    `<circle cx="${lx + 27}" cy="CY" r="7" fill="none" stroke="#c0392b" stroke-width="2.5"/>`,
    input.chosenVotes === null ? "No threshold reaches the target" : `Strictest threshold reaching it: ≥${input.chosenVotes}`,
  );
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}

function escape(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}
