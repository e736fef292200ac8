// The slices (and counters) of the visible window, fetched from the backend, which applies the
// level of detail: the browser only ever holds one viewport's worth whatever the trace size.
// Requests are debounced, cover a margin on each side (smooth panning), are skipped while
// what was fetched still covers the window at a similar resolution, and are retried with
// back-off while the backend answers "loading" (the profile or its index is being (re)read).
import { useCallback, useEffect, useRef, useState, type MutableRefObject } from 'react';
import type { ProfileKey } from '../../api';
import { usePoll } from '../../hooks';
import type { Layout } from '../../timeline/layout';
import { traceApi, type CountersResponse, type TracksResponse } from '../../timeline/model';
import { laneData, type LaneData } from '../../timeline/render';
import { fetchWindow, type Window } from '../../timeline/scale';

const DEBOUNCE_MS = 60;

interface ViewportRequest {
  start: number;
  end: number;
  /** µs per pixel of the window asked for. */
  px: number;
  trackKey: string;
  /** null: every track. */
  tracks: number[] | null;
  widthPx: number;
}

export interface ViewportData {
  data: MutableRefObject<LaneData | null>;
  counters: MutableRefObject<{ base: number; series: CountersResponse['series'] } | null>;
  /** Asks for the current window's data (debounced; nothing happens while it is covered). */
  requestData: () => void;
}

interface Options {
  profile: ProfileKey;
  tracks?: TracksResponse;
  layout: Layout;
  plotW: number;
  origin: number;
  winRef: MutableRefObject<Window>;
  /** Called when new data is in (slices: `slices` true; counters: false). */
  onData: (slices: boolean) => void;
  onError: (message: string) => void;
}

export function useViewportData({ profile, tracks, layout, plotW, origin, winRef, onData, onError }: Options): ViewportData {
  const data = useRef<LaneData | null>(null);
  const counters = useRef<{ base: number; series: CountersResponse['series'] } | null>(null);
  const fetched = useRef<ViewportRequest | null>(null);
  const [request, setRequest] = useState<ViewportRequest | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const onDataRef = useRef(onData);
  onDataRef.current = onData;

  const requestData = useCallback(() => {
    if (!tracks) return;
    clearTimeout(timer.current);
    timer.current = setTimeout(() => {
      const w = winRef.current;
      const px = (w.end - w.start) / plotW;
      const trackKey = layout.visibleTracks.join(',');
      const f = fetched.current;
      if (f && f.trackKey === trackKey && w.start >= f.start && w.end <= f.end && px >= f.px * 0.75 && px <= f.px * 1.5) return;
      const { start, end } = fetchWindow(w);
      const all = layout.visibleTracks.length === tracks.tracks.length;
      setRequest({ start, end, px, trackKey, tracks: all ? null : layout.visibleTracks, widthPx: plotW * 2 });
    }, DEBOUNCE_MS);
  }, [tracks, plotW, layout, winRef]);
  useEffect(() => () => clearTimeout(timer.current), []);

  // New tracks, layout or width: fetch again whatever was covered before.
  useEffect(() => {
    fetched.current = null;
    requestData();
  }, [requestData]);

  const hasCounters = !!tracks?.tracks.some((t) => t.counters.length);
  usePoll(
    request
      ? (signal) => {
          if (hasCounters) {
            traceApi.counters(profile, origin + request.start, origin + request.end, request.widthPx, signal).then(
              (resp) => {
                if (!resp || !('series' in resp)) return;
                counters.current = { base: resp.start_us - origin, series: resp.series };
                onDataRef.current(false);
              },
              () => undefined,
            );
          }
          return traceApi.viewport(profile, origin + request.start, origin + request.end, request.widthPx, request.tracks, signal);
        }
      : null,
    [request],
    (o) => {
      if (o.error) {
        onError(o.error.message);
        return 'stop';
      }
      const resp = o.value;
      if (!resp || !('lanes' in resp)) {
        fetched.current = null;
        return 'again';
      }
      data.current = laneData(resp, origin);
      fetched.current = request;
      onDataRef.current(true);
      return 'stop';
    },
  );

  return { data, counters, requestData };
}
