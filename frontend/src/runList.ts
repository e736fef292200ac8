// The run list follows the logdir while the page is open. One poll asks for `/runs` and then
// for the selected run's `/run` (its workers and spans: `/runs` does not change when a span is
// added to a ready run), one request after the other; every ~2 s while something changes or
// is still loading, backing off to ~30 s while nothing does. While something loads, the next
// `/runs` is asked at once and held by the backend until a span's state changed (`since`):
// the list, and the view waiting for its run, follow the load as it happens.
import { useRef, useState } from 'react';
import { api, type RunInfo, type RunsResponse, type RunSummary } from './api';
import { usePoll, type Backoff, type PollNext } from './hooks';
import { defaultRun } from './selection';

export const RUNS_BACKOFF: Backoff = { firstMs: 2000, maxMs: 30000, factor: 2 };

export interface RunList {
  runs?: RunSummary[];
  /** The last poll of `/runs` failed (the previous list, if any, is kept). */
  error?: string;
  /** The selected run's info, once it could be read. */
  info?: RunInfo;
  infoError?: string;
}

interface Answer {
  list: RunsResponse;
  info?: RunInfo;
  infoError?: string;
}

/** True while the backend is still discovering or reading something the UI shows. */
export function runsBusy(r: RunsResponse): boolean {
  return r.scanned === false || r.runs.some((x) => x.state === 'loading' || x.trace_state === 'loading');
}

/** The next poll after an answer: soon when it differs from the last one or work is under way. */
export function nextRunsPoll(r: RunsResponse, previousKey: string | undefined, info?: unknown): { key: string; next: PollNext } {
  const key = JSON.stringify([r.scanned, r.runs, info ?? null]);
  if (runsBusy(r) && r.generation !== undefined) return { key, next: 'soon' };
  return { key, next: key !== previousKey || runsBusy(r) ? 'reset' : 'again' };
}

/** The `since` of the next `/runs`: the generation of a busy answer (then it is held). */
export function heldSince(r: RunsResponse): number | undefined {
  return runsBusy(r) ? r.generation : undefined;
}

/**
 * The runs of the logdir and the info of `selectedRun` (the URL's run, else the default one).
 * A run's info is read once it is ready, and kept being read while a run already shown loads
 * new spans (so the view stays on screen meanwhile).
 */
export function useRunList(selectedRun: string | undefined): RunList {
  const [list, setList] = useState<RunList>({});
  const lastKey = useRef<string | undefined>(undefined);
  const shownInfo = useRef<string | undefined>(undefined);
  const since = useRef<number | undefined>(undefined);

  usePoll<Answer>(
    async (signal) => {
      const runs = await api.runs(signal, since.current);
      const name = selectedRun ?? defaultRun(runs.runs)?.name;
      const summary = runs.runs.find((r) => r.name === name);
      const readable = summary?.state === 'ready' || (summary?.state === 'loading' && shownInfo.current === name);
      if (!name || !readable) return { list: runs };
      try {
        return { list: runs, info: await api.run(name, signal) };
      } catch (e) {
        if ((e as Error).name === 'AbortError') throw e;
        return { list: runs, infoError: (e as Error).message };
      }
    },
    [selectedRun],
    (o) => {
      if (o.error) {
        setList((l) => ({ ...l, error: o.error.message }));
        return 'again';
      }
      const { list: runs, info, infoError } = o.value;
      since.current = heldSince(runs);
      const { key, next } = nextRunsPoll(runs, lastKey.current, info ?? infoError);
      if (key !== lastKey.current) {
        // Before the first scan of the logdir an empty list means "not known yet".
        const known = runs.scanned === false && runs.runs.length === 0 ? undefined : runs.runs;
        // Info of a run that is loading again is kept until the next read (new spans).
        setList((l) => ({ runs: known, info: info ?? l.info, infoError }));
      } else {
        setList((l) => (l.error ? { ...l, error: undefined } : l));
      }
      if (info) shownInfo.current = info.name;
      lastKey.current = key;
      return next;
    },
    RUNS_BACKOFF,
  );
  return list;
}
