// The profile's timeline tracks, polled (with back-off) while the backend is still indexing
// the trace. The first window is the URL's (trace.t0 / trace.t1, absolute µs) or the whole trace.
import { useState, type MutableRefObject } from 'react';
import { isLoadingAnswer, type ProfileKey } from '../../api';
import { usePoll } from '../../hooks';
import { traceApi, type TracksResponse } from '../../timeline/model';
import { around, type Window } from '../../timeline/scale';
import type { Filters } from '../types';

export interface TracksState {
  tracks?: TracksResponse;
  error?: string;
  /** What the loading message names: the request, or the index the backend is building. */
  loadingWhat: string;
}

/** The window first shown for `t`. */
export function initialWindow(t: TracksResponse, filters: Filters): Window {
  const full = { start: 0, end: Math.max(t.end_us - t.start_us, 0.001) };
  const t0 = Number(filters['trace.t0']);
  const t1 = Number(filters['trace.t1']);
  return Number.isFinite(t0) && Number.isFinite(t1) && t1 > t0 ? around(t0 - t.start_us, t1 - t.start_us, 0.02) : full;
}

/** Loads the tracks of `profile`; sets `winRef` to the first window before they are shown. */
export function useTracks(profile: ProfileKey, filters: Filters, winRef: MutableRefObject<Window>): TracksState {
  const [state, setState] = useState<TracksState>({ loadingWhat: 'timeline' });
  usePoll(
    (signal) => traceApi.tracks(profile, signal),
    [profile.run, profile.worker, profile.span],
    (o) => {
      if (o.error) {
        setState((s) => ({ ...s, error: o.error.message }));
        return 'stop';
      }
      if (isLoadingAnswer(o.value)) {
        setState((s) => ({ ...s, loadingWhat: 'timeline index' }));
        return 'again';
      }
      winRef.current = initialWindow(o.value, filters);
      setState({ tracks: o.value, loadingWhat: 'timeline' });
      return 'stop';
    },
  );
  return state;
}
