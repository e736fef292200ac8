// Props every view of the registry receives from the shell. A leaf module (types only), so
// views never import the shell back.
import type { ProfileKey, RunInfo, Worker } from '../api';

/** Filter values of the URL state, namespaced by view ("kernels.group" → "core"). */
export type Filters = Record<string, string>;
/** Sets or (with undefined / "") removes filters; the rest of the URL state stays. */
export type SetFilters = (patch: Record<string, string | undefined>) => void;

/** Where a link between views leads: a view of the current profile, of another worker of the
 * run (its first span unless `span` is given), or of any profile. */
export interface OpenTarget {
  view: string;
  run?: string;
  worker?: string;
  span?: string;
}

export interface ViewProps {
  /** The selected profile (run, worker, span). */
  profile: ProfileKey;
  worker: Worker;
  /** The selected run: its workers and the views its profiles support. */
  info: RunInfo;
  filters: Filters;
  setFilters: SetFilters;
  /** Opens another view (history entry, so Back returns). */
  open: (target: OpenTarget) => void;
}
