// ECharts wrapper: tree-shaken ECharts (only the charts and components used here), resized
// with its container, re-created when the theme changes.
import { useEffect, useRef } from 'react';
import * as echarts from 'echarts/core';
import { BarChart, HeatmapChart, LineChart, PieChart } from 'echarts/charts';
import {
  BrushComponent,
  GridComponent,
  LegendComponent,
  MarkPointComponent,
  TitleComponent,
  TooltipComponent,
  VisualMapComponent,
} from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';
import { fitLegend, scaleFonts, type ChartOption } from '../charts';
import { FONT_STACK, useTheme } from '../theme';

echarts.use([
  BarChart,
  HeatmapChart,
  LineChart,
  PieChart,
  BrushComponent,
  GridComponent,
  LegendComponent,
  MarkPointComponent,
  TitleComponent,
  TooltipComponent,
  VisualMapComponent,
  CanvasRenderer,
]);

export type ChartInstance = echarts.ECharts;

export interface ChartProps {
  option: ChartOption;
  height?: number | string;
  /** Accessible label; also used by tests to find the chart. */
  label: string;
  testId?: string;
  /** Called after each (re)initialization, e.g. to bind events or start brushing. */
  onReady?: (chart: ChartInstance) => void;
}

export function Chart({ option, height = 320, label, testId, onReady }: ChartProps) {
  const ref = useRef<HTMLDivElement>(null);
  const chartRef = useRef<ChartInstance | null>(null);
  const optionRef = useRef(option);
  optionRef.current = option;
  const onReadyRef = useRef(onReady);
  onReadyRef.current = onReady;
  const theme = useTheme();

  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const chart = echarts.init(el, theme === 'dark' ? 'dark' : undefined, { renderer: 'canvas' });
    chartRef.current = chart;
    const ro = new ResizeObserver(() => {
      chart.resize();
      const legend = fitLegend(optionRef.current, el.clientWidth, fontScale());
      if (legend) chart.setOption({ legend } as echarts.EChartsCoreOption);
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      chart.dispose();
      chartRef.current = null;
    };
  }, [theme]);

  useEffect(() => {
    const chart = chartRef.current;
    if (!chart) return;
    const scale = fontScale();
    const scaled = scaleFonts(option, scale);
    const legend = fitLegend(scaled, ref.current?.clientWidth ?? 0, scale);
    chart.setOption(
      {
        ...scaled,
        ...(legend ? { legend } : {}),
        animationDuration: 400,
        animationDurationUpdate: 300,
        textStyle: { ...(scaled.textStyle as object), fontFamily: FONT_STACK },
      } as echarts.EChartsCoreOption,
      { notMerge: true },
    );
    // What is drawn, for tests and tools (canvas content is not inspectable).
    if (ref.current) ref.current.dataset.summary = JSON.stringify(summarize(option));
    onReadyRef.current?.(chart);
  }, [option, theme]);

  return (
    <div
      className="chart"
      ref={ref}
      role="img"
      aria-label={label}
      data-testid={testId}
      style={{ height: typeof height === 'number' ? Math.round(height * fontScale()) : height, width: '100%' }}
    />
  );
}

interface SeriesSummary {
  name?: string;
  type?: string;
  points: number;
  /** Names and values of pie slices / bars (small series only). */
  names?: string[];
  values?: (number | null)[];
}

/** A compact description of the series of an option (bar/pie values, line lengths). */
export function summarize(option: ChartOption): SeriesSummary[] {
  const series = (option.series ?? []) as { name?: string; type?: string; data?: unknown[] }[];
  return series.map((s) => {
    const data = s.data ?? [];
    const out: SeriesSummary = { name: s.name, type: s.type, points: data.length };
    if (s.type === 'pie') {
      out.names = data.map((d) => String((d as { name?: unknown }).name ?? ''));
      out.values = data.map((d) => (d as { value?: number }).value ?? null);
    } else if (s.type === 'bar') {
      out.values = data as (number | null)[];
    }
    return out;
  });
}

/** Root font size relative to the 14px design size (larger on 4K screens, see styles.css). */
export function fontScale(): number {
  const fs = parseFloat(getComputedStyle(document.documentElement).fontSize);
  return Number.isFinite(fs) && fs > 0 ? fs / 14 : 1;
}

