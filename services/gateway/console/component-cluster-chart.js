// A screening job's reason clusters as a horizontal bar chart.

import { col, h, s, table } from "./dom.js";

/** The clusters as a horizontal bar chart (inline SVG), with the numbers as a table for screen readers. */
export function clusterChart(clusters) {
  if (clusters.length === 0) return h("p", { class: "muted", text: "No clusters." });
  const width = 760;
  const labelWidth = 300;
  const barHeight = 24;
  const gap = 10;
  const height = clusters.length * (barHeight + gap) + gap;
  const max = Math.max(1, ...clusters.map((c) => c.count));
  const scale = (width - labelWidth - 60) / max;
  const chart = s(
    "svg",
    { viewBox: `0 0 ${width} ${height}`, width: String(width), height: String(height), role: "img", "aria-labelledby": "clusters-chart-title", id: "clusters-chart" },
    s("title", { id: "clusters-chart-title", text: `Papers per reason cluster: ${clusters.map((c) => `${c.label} ${c.count}`).join(", ")}` }),
    clusters.map((cluster, i) => {
      const y = gap + i * (barHeight + gap);
      const label = cluster.label.length > 44 ? `${cluster.label.slice(0, 43)}…` : cluster.label;
      const bar = Math.max(2, cluster.count * scale);
      return s(
        "g",
        {},
        s("title", { text: `${cluster.label}: ${cluster.count}` }),
        s("text", { x: String(labelWidth - 8), y: String(y + barHeight / 2 + 4), "text-anchor": "end", text: label }),
        s("rect", { class: "bar", x: String(labelWidth), y: String(y), width: String(bar), height: String(barHeight), rx: "2" }),
        s("text", { x: String(labelWidth + bar + 6), y: String(y + barHeight / 2 + 4), text: String(cluster.count) }),
      );
    }),
  );
  const numbers = table({ bare: true }, ["Cluster", col("Papers", true)], clusters.map((c) => h("tr", {}, h("td", { text: c.label }), h("td", { class: "num", text: String(c.count) }))));
  return h("figure", { class: "chart panel" }, chart, h("details", {}, h("summary", { text: "The numbers as a table" }), numbers));
}
