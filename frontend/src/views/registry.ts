// The views of the plugin, each declared once. The shell (App, LeftPanel, selection) reads
// this list; adding a view is its component file plus one line here. Which views a run has is
// the backend's answer (`/run` → `views`); ids not listed here are ignored.
import type { ComponentType } from 'react';
import type { ViewProps } from './types';
import { OverviewView } from './Overview';
import { AdvisorView } from './Advisor';
import { OperatorsView } from './Operators';
import { KernelsView } from './Kernels';
import { MemoryView } from './Memory';
import { TraceView } from './trace/TraceView';
import { DispatchView } from './Dispatch';
import { DistributedView } from './DistributedView';
import { CompareView } from './CompareView';
import { DataPipelineView } from './DataPipeline';

export interface ViewEntry {
  id: string;
  title: string;
  component: ComponentType<ViewProps>;
  /** 'run': the view shows the whole run, so it stays mounted when the worker or span
   * changes; otherwise it is mounted afresh for each profile. */
  scope?: 'run';
  /** Listed even when the backend does not name it: the timeline is indexed after the other
   * views are served, and the view itself says when a profile has no trace. */
  always?: boolean;
}

/** Navigation order. */
export const VIEWS: readonly ViewEntry[] = [
  { id: 'overview', title: 'Overview', component: OverviewView },
  { id: 'advisor', title: 'Advisor', component: AdvisorView },
  { id: 'operators', title: 'Operators', component: OperatorsView },
  { id: 'kernels', title: 'Kernels', component: KernelsView },
  { id: 'memory', title: 'Memory', component: MemoryView },
  { id: 'trace', title: 'Trace', component: TraceView, always: true },
  { id: 'data_pipeline', title: 'Data pipeline', component: DataPipelineView },
  { id: 'dispatch', title: 'Dispatch', component: DispatchView },
  { id: 'distributed', title: 'Distributed', component: DistributedView, scope: 'run' },
];

/** Compare is a mode of the shell rather than a view of the selection: it shows two profiles
 * picked in the left panel (or in the view itself), whatever run is selected. */
export const COMPARE_VIEW = { id: 'compare', title: 'Compare', component: CompareView } as const;

export function findView(id: string | undefined): ViewEntry | undefined {
  return VIEWS.find((v) => v.id === id);
}

export function viewTitle(id: string): string {
  return id === COMPARE_VIEW.id ? COMPARE_VIEW.title : findView(id)?.title ?? id;
}
