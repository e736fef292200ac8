// Data-fetching hook with visible states: loading (with progress when the backend reports
// it), error (message shown), data. Backend "still loading" answers are polled, never
// turned into an endless spinner: they carry progress, and errors end the polling.
import { useEffect, useRef, useState } from 'react';
import { isLoadingAnswer } from './api';

export interface AsyncState<T> {
  data?: T;
  error?: string;
  loading: boolean;
  /** 0..1 when the backend reports progress while loading. */
  progress?: number;
}

export const POLL_MS = 1000;

/**
 * Runs `fn` whenever `deps` change (aborting the previous call). `fn` returning null/undefined
 * means "nothing to load". Keeps the previous data while reloading, so tables don't flicker.
 */
export function useAsync<T>(fn: ((signal: AbortSignal) => Promise<T>) | null, deps: unknown[]): AsyncState<T> {
  const [state, setState] = useState<AsyncState<T>>({ loading: fn !== null });
  const fnRef = useRef(fn);
  fnRef.current = fn;

  useEffect(() => {
    const f = fnRef.current;
    if (!f) {
      setState({ loading: false });
      return;
    }
    const ctrl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    let cancelled = false;
    setState((s) => ({ data: s.data, loading: true }));
    const attempt = () => {
      f(ctrl.signal).then(
        (data) => {
          if (cancelled) return;
          if (isLoadingAnswer(data)) {
            setState((s) => ({ data: s.data, loading: true, progress: data.progress }));
            timer = setTimeout(attempt, POLL_MS);
          } else {
            setState({ data, loading: false });
          }
        },
        (err: Error) => {
          if (cancelled || err.name === 'AbortError') return;
          setState({ loading: false, error: err.message || String(err) });
        },
      );
    };
    attempt();
    return () => {
      cancelled = true;
      ctrl.abort();
      if (timer) clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);

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
