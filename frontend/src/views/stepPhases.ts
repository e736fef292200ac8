// Graph-mode step phases of the overview answer (`summary` route, `phases`): types and the
// pure ECharts option builder. Names from profiles reach tooltips only through escapeHtml.
import { PALETTE, type ChartOption } from '../charts';
import { escapeHtml, formatDuration } from '../format';

export interface PhaseItem {
  phase: string;
  name: string;
  offset_us: number;
  dur_us: number;
}

export interface PhaseStep {
  step: number;
  total_us: number;
  start_us: number;
  phases: PhaseItem[];
}

export interface ReduceAverage {
  name: string;
  offset_us: number;
  dur_us: number;
  steps: number;
}

export interface PhasesAverage {
  total_us: number;
  iteration_interval_us: number;
  fp_and_bp_us: number;
  tail_us: number;
  iteration_interval_pct: number | null;
  fp_and_bp_pct: number | null;
  tail_pct: number | null;
  reduce: ReduceAverage[];
}

export interface Phases {
  labels: Record<string, string>;
  steps: PhaseStep[];
  steps_total: number;
  average: PhasesAverage;
  average_source: 'producer' | 'computed';
}

export interface SummaryWithPhases {
  phases?: Phases | null;
  flops?: Record<string, unknown> | null;
}

export const MAIN_PHASES = ['iteration_interval', 'fp_and_bp', 'tail'] as const;

/** Duration of one main phase of a step (0 when the step lacks it). */
export function phaseDuration(step: PhaseStep, phase: string): number {
  return step.phases.filter((p) => p.phase === phase).reduce((a, p) => a + p.dur_us, 0);
}

/** Time of a step during which some gradient reduction runs: the union of its reduce
 * segments (parallel streams overlap each other, and the main phases). */
export function reduceDuration(step: PhaseStep): number {
  const segs = step.phases
    .filter((p) => p.phase === 'reduce')
    .map((p) => [p.offset_us, p.offset_us + p.dur_us] as const)
    .sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [a, b] of segs) {
    if (b <= end) continue;
    total += b - Math.max(a, end);
    end = b;
  }
  return total;
}

/** Stacked bars, one per step: gap, FP+BP and tail stack to the step time; the gradient
 * reduction time is a separate bar beside them (it overlaps FP+BP / tail). */
export function phasesOption(ph: Phases): ChartOption {
  const steps = ph.steps.map((s) => String(s.step));
  const series: Record<string, unknown>[] = MAIN_PHASES.map((p, i) => ({
    name: ph.labels[p] ?? p,
    type: 'bar',
    stack: 'phases',
    barMaxWidth: 40,
    itemStyle: { color: PALETTE[i % PALETTE.length] },
    data: ph.steps.map((s) => phaseDuration(s, p)),
  }));
  if (ph.steps.some((s) => reduceDuration(s) > 0)) {
    series.push({
      name: `${ph.labels.reduce ?? 'Reduce'} (any stream)`,
      type: 'bar',
      barMaxWidth: 16,
      itemStyle: { color: PALETTE[4] },
      data: ph.steps.map(reduceDuration),
    });
  }
  return {
    backgroundColor: 'transparent',
    color: PALETTE,
    tooltip: {
      confine: true,
      trigger: 'axis',
      axisPointer: { type: 'shadow' },
      formatter: (params: unknown) => {
        const items = (Array.isArray(params) ? params : [params]) as { dataIndex: number; seriesName: string; value: number }[];
        if (!items.length) return '';
        const st = ph.steps[items[0].dataIndex];
        const head = `<b>Step ${escapeHtml(st?.step)}</b> · ${escapeHtml(formatDuration(st?.total_us))}`;
        return [head, ...items.map((p) => `${escapeHtml(p.seriesName)}: <b>${escapeHtml(formatDuration(p.value))}</b>`)].join('<br/>');
      },
    },
    legend: { type: 'scroll', top: 0 },
    grid: { left: 8, right: 16, top: 36, bottom: 8, containLabel: true },
    xAxis: { type: 'category', data: steps, name: 'Step', nameLocation: 'middle', nameGap: 26 },
    yAxis: { type: 'value', axisLabel: { formatter: (v: number) => formatDuration(v) } },
    series,
  };
}

export interface PhaseAverageRow {
  phase: string;
  avg_us: number;
  share_pct: number | null;
  offset_us: number | null;
}

/** Rows of the averages table: the three phases with their shares, then each reduce segment. */
export function averageRows(ph: Phases): PhaseAverageRow[] {
  const a = ph.average;
  const main: PhaseAverageRow[] = MAIN_PHASES.map((p) => ({
    phase: ph.labels[p] ?? p,
    avg_us: a[`${p}_us` as 'tail_us'],
    share_pct: a[`${p}_pct` as 'tail_pct'],
    offset_us: null,
  }));
  const reduce = a.reduce.map((r) => ({ phase: r.name, avg_us: r.dur_us, share_pct: null, offset_us: r.offset_us }));
  return [...main, { phase: 'Step total', avg_us: a.total_us, share_pct: 100, offset_us: null }, ...reduce];
}
