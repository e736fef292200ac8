// Trace search: one page of hits at a time; stepping past the page fetches the next one.
// Each hit shown is zoomed to and selected.
import { useCallback, useRef, useState } from 'react';
import type { ProfileKey } from '../../api';
import { searchPageOffset, stepHit } from '../../timeline/link';
import { traceApi } from '../../timeline/model';

export interface SearchState {
  q: string;
  total: number;
  /** Position of the current hit over all `total`. */
  pos: number;
  /** Number of the first hit of the page in `ids`. */
  offset: number;
  ids: { id: number; start_us: number; dur_us: number }[];
}

interface Options {
  profile: ProfileKey;
  origin: number;
  /** Shows a hit: zoom to it (times relative to the trace start) and select it. */
  show: (startRel: number, dur: number, id: number) => void;
  onError: (message: string) => void;
}

export function useTraceSearch({ profile, origin, show, onError }: Options) {
  const [search, setSearch] = useState<SearchState | null>(null);
  const seq = useRef(0);

  const runSearch = useCallback(
    (q: string, pos = 0) => {
      const mine = ++seq.current;
      if (!q) {
        setSearch(null);
        return;
      }
      traceApi.search(profile, q, searchPageOffset(pos)).then(
        (r) => {
          if (mine !== seq.current) return; // a later search or step won
          const at = Math.min(pos, Math.max(r.total - 1, 0));
          setSearch({ q, total: r.total, pos: at, offset: r.offset, ids: r.hits });
          const h = r.hits[at - r.offset];
          if (h) show(h.start_us - origin, h.dur_us, h.id);
        },
        (e: Error) => onError(e.message),
      );
    },
    [profile, origin, show, onError],
  );

  const step = (d: number) => {
    if (!search || !search.total) return;
    const pos = stepHit(search.pos, d, search.total);
    const h = search.ids[pos - search.offset];
    if (pos < search.offset || !h) {
      runSearch(search.q, pos); // the hit is on another page
      return;
    }
    seq.current++;
    setSearch({ ...search, pos });
    show(h.start_us - origin, h.dur_us, h.id);
  };

  return { search, runSearch, step };
}
