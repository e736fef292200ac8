// The run list follows the logdir while the page is open: `/runs` is polled, every ~2 s while
// something changes or is still loading, backing off to ~30 s while nothing does.
import { useRef, useState } from 'react';
import { api, type RunsResponse, type RunSummary } from './api';
import { usePoll, type Backoff, type PollNext } from './hooks';

export const RUNS_BACKOFF: Backoff = { firstMs: 2000, maxMs: 30000, factor: 2 };

export interface RunList {
  runs?: RunSummary[];
  /** The last poll failed (the previous list, if any, is kept). */
  error?: string;
}

/** True while the backend is still discovering or reading something the UI shows. */
export function runsBusy(r: RunsResponse): boolean {
  return r.scanned === false || r.runs.some((x) => x.state === 'loading' || x.trace_state === 'loading');
}

/** The next poll after an answer: soon when it differs from the last one or work is under way. */
export function nextRunsPoll(r: RunsResponse, previousKey: string | undefined): { key: string; next: PollNext } {
  const key = JSON.stringify([r.scanned, r.runs]);
  return { key, next: key !== previousKey || runsBusy(r) ? 'reset' : 'again' };
}

export function useRunList(): RunList {
  const [list, setList] = useState<RunList>({});
  const lastKey = useRef<string | undefined>(undefined);
  usePoll(
    (signal) => api.runs(signal),
    [],
    (o) => {
      if (o.error) {
        setList((l) => ({ runs: l.runs, error: o.error.message }));
        return 'again';
      }
      const { key, next } = nextRunsPoll(o.value, lastKey.current);
      // An unchanged answer keeps the same array, so nothing downstream re-renders.
      // Before the first scan of the logdir an empty list means "not known yet".
      const known = o.value.scanned === false && o.value.runs.length === 0 ? undefined : o.value.runs;
      if (key !== lastKey.current) setList({ runs: known });
      else setList((l) => (l.error ? { runs: l.runs } : l));
      lastKey.current = key;
      return next;
    },
    RUNS_BACKOFF,
  );
  return list;
}
