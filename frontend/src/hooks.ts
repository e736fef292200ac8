// Fetching hooks. Every place that asks the backend again and again (a profile still being
// read, the run list following the logdir, the timeline's viewport while its index is built)
// goes through one poller, `startPoll` / `usePoll`: one request in flight at a time, a delay
// that grows while nothing changes, and nothing left running once the component is gone.
import { useEffect, useRef, useState } from 'react';
import { isLoadingAnswer } from './api';

/** Delays between polls: `firstMs`, then times `factor` after each unchanged answer, at most `maxMs`. */
export interface Backoff {
  firstMs: number;
  maxMs: number;
  factor: number;
}

/** Waiting for a profile (or the timeline index) that the backend is still reading. Short
 * delays: a request asked again is held by the backend until the profile is ready or its
 * progress moved (`wait_ms`, api.ts), so the answer the user waits for is shown as soon as
 * it exists, and these delays only space the requests that come back with news. */
export const LOADING_BACKOFF: Backoff = { firstMs: 200, maxMs: 1000, factor: 1.5 };

/** What a poll does after an answer: ask again after a growing delay, after the first delay
 * again (something changed, so more changes are likely soon), after SOON_MS (the next
 * request is one the backend holds until there is news), or stop. */
export type PollNext = 'again' | 'reset' | 'soon' | 'stop';

/** The delay before a held request: short, as the backend does the waiting (and bounded
 * below, so a backend that does not hold is not asked in a loop). */
export const SOON_MS = 100;

export type PollOutcome<T> = { value: T; error?: undefined } | { error: Error; value?: undefined };

/**
 * Calls `fn` now and then as `handle` decides after each answer (or error). The next call is
 * only scheduled once the previous one has settled, so there is never more than one request
 * in flight. Returns `stop`, which aborts the call in flight and cancels the next one;
 * answers that arrive after `stop` are dropped.
 */
export function startPoll<T>(
  fn: (signal: AbortSignal) => Promise<T>,
  handle: (outcome: PollOutcome<T>) => PollNext,
  backoff: Backoff,
): () => void {
  const ctrl = new AbortController();
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let delay = backoff.firstMs;

  const settle = (outcome: PollOutcome<T>) => {
    if (stopped) return;
    if (outcome.error?.name === 'AbortError') return;
    const next = handle(outcome);
    if (next === 'stop' || stopped) return;
    if (next === 'soon') {
      timer = setTimeout(attempt, SOON_MS);
      return;
    }
    if (next === 'reset') delay = backoff.firstMs;
    timer = setTimeout(attempt, delay);
    delay = Math.min(delay * backoff.factor, backoff.maxMs);
  };
  function attempt() {
    timer = undefined;
    let pending: Promise<T>;
    try {
      pending = fn(ctrl.signal);
    } catch (e) {
      pending = Promise.reject(e);
    }
    pending.then(
      (value) => settle({ value }),
      (e: unknown) => settle({ error: e instanceof Error ? e : new Error(String(e)) }),
    );
  }

  attempt();
  return () => {
    stopped = true;
    ctrl.abort();
    if (timer !== undefined) clearTimeout(timer);
  };
}

/**
 * React hook over `startPoll`: (re)starts whenever `deps` change, stops on unmount. `fn`
 * null means "nothing to poll". `fn` and `handle` may be new closures on every render; the
 * latest ones are used.
 */
export function usePoll<T>(
  fn: ((signal: AbortSignal) => Promise<T>) | null,
  deps: unknown[],
  handle: (outcome: PollOutcome<T>) => PollNext,
  backoff: Backoff = LOADING_BACKOFF,
): void {
  const fnRef = useRef(fn);
  fnRef.current = fn;
  const handleRef = useRef(handle);
  handleRef.current = handle;

  useEffect(() => {
    const first = fnRef.current;
    if (!first) return;
    return startPoll((signal) => (fnRef.current ?? first)(signal), (o) => handleRef.current(o), backoff);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
}

export interface AsyncState<T> {
  data?: T;
  error?: string;
  loading: boolean;
  /** 0..1 when the backend reports progress while loading. */
  progress?: number;
  /** The backend answered "still loading" (as opposed to: the request is on its way). */
  waiting?: boolean;
}

/**
 * Data-fetching hook with visible states: loading (with progress when the backend reports
 * it), error (message shown), data. Runs `fn` whenever `deps` change (aborting the previous
 * call); `fn` null means "nothing to load". Backend "still loading" answers are polled with
 * back-off, never turned into an endless spinner: they carry progress, and errors end the
 * polling. Keeps the previous data while reloading, so tables don't flicker.
 */
export function useAsync<T>(fn: ((signal: AbortSignal) => Promise<T>) | null, deps: unknown[]): AsyncState<T> {
  const [state, setState] = useState<AsyncState<T>>({ loading: fn !== null });
  const active = fn !== null;
  const lastProgress = useRef<number | undefined>(undefined);

  // Declared before the poll, so this reset runs before the first answer can arrive.
  useEffect(() => {
    lastProgress.current = undefined;
    if (active) setState((s) => ({ data: s.data, loading: true }));
    else setState({ loading: false });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, active]);

  usePoll<T>(fn, [...deps, active], (o) => {
    if (o.error) {
      setState({ loading: false, error: o.error.message || String(o.error) });
      return 'stop';
    }
    const data = o.value;
    if (isLoadingAnswer(data)) {
      setState((s) => ({ data: s.data, loading: true, progress: data.progress, waiting: true }));
      const moved = data.progress !== lastProgress.current;
      lastProgress.current = data.progress;
      return moved ? 'reset' : 'again';
    }
    setState({ data, loading: false });
    return 'stop';
  });

  return state;
}

/** A value that follows `value` after `ms` without changes (search boxes). */
export function useDebounced<T>(value: T, ms: number): T {
  const [v, setV] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setV(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return v;
}
