/** One metric family of the Prometheus text exposition format. */
export interface MetricFamily {
  name: string;
  help: string;
  type: 'counter' | 'gauge';
  samples: Array<{ labels?: Record<string, string>; value: number }>;
}

const escapeLabel = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const escapeHelp = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
const numberText = (v: number): string =>
  Number.isNaN(v) ? 'NaN' : v === Infinity ? '+Inf' : v === -Infinity ? '-Inf' : String(v);

/**
 * Renders metric families in the Prometheus text format (version 0.0.4): `# HELP`, `# TYPE`, then one line per
 * sample with its labels escaped. A family without samples still gets its HELP and TYPE lines. Pure: no I/O.
 */
export function renderPrometheus(families: readonly MetricFamily[]): string {
  const lines: string[] = [];
  for (const f of families) {
    lines.push(`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`);
    for (const s of f.samples) {
      const labels = Object.entries(s.labels ?? {});
      const text = labels.length === 0 ? '' : `{${labels.map(([k, v]) => `${k}="${escapeLabel(v)}"`).join(',')}}`;
      lines.push(`${f.name}${text} ${numberText(s.value)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
