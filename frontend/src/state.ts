// Application state that lives in the URL hash of the plugin's own document, so that a
// copied link (data/plugin_entry.html?name=npu_profiler#run=..&view=..) reproduces the view.
import { useCallback, useEffect, useState } from 'react';

export const VIEW_IDS = ['overview', 'operators', 'kernels', 'memory', 'trace', 'distributed', 'advisor'] as const;
export type ViewId = (typeof VIEW_IDS)[number];

export const VIEW_TITLES: Record<string, string> = {
  overview: 'Overview',
  operators: 'Operators',
  kernels: 'Kernels',
  memory: 'Memory',
  trace: 'Trace',
  distributed: 'Distributed',
  advisor: 'Advisor',
  compare: 'Compare',
};

export interface UrlState {
  run?: string;
  worker?: string;
  span?: string;
  view?: string;
  /** View-specific filters, namespaced by view ("kernels.group" → "core"). */
  filters: Record<string, string>;
}

const MAIN_KEYS = ['run', 'worker', 'span', 'view'] as const;

export function emptyState(): UrlState {
  return { filters: {} };
}

/** Parses a location hash ("#run=a&view=kernels&kernels.top=10") into state. */
export function decodeState(hash: string): UrlState {
  const raw = hash.startsWith('#') ? hash.slice(1) : hash;
  const params = new URLSearchParams(raw);
  const state: UrlState = { filters: {} };
  params.forEach((value, key) => {
    if ((MAIN_KEYS as readonly string[]).includes(key)) {
      if (value !== '') (state as unknown as Record<string, string>)[key] = value;
    } else if (key !== '' && value !== '') {
      state.filters[key] = value;
    }
  });
  return state;
}

/** Serializes state into a hash (with leading "#"), keys in a stable order. */
export function encodeState(state: UrlState): string {
  const params = new URLSearchParams();
  for (const key of MAIN_KEYS) {
    const v = state[key];
    if (v !== undefined && v !== '') params.set(key, v);
  }
  for (const key of Object.keys(state.filters).sort()) {
    const v = state.filters[key];
    if (v !== undefined && v !== '') params.set(key, v);
  }
  const s = params.toString();
  return s ? `#${s}` : '';
}

export type StatePatch = Partial<Omit<UrlState, 'filters'>> & {
  filters?: Record<string, string | undefined>;
};

/** Applies a patch; filter values of undefined or "" remove the filter. */
export function applyPatch(state: UrlState, patch: StatePatch): UrlState {
  const next: UrlState = { ...state, filters: { ...state.filters } };
  for (const key of MAIN_KEYS) {
    if (key in patch) {
      const v = patch[key];
      if (v === undefined || v === '') delete next[key];
      else next[key] = v;
    }
  }
  if (patch.filters) {
    for (const [k, v] of Object.entries(patch.filters)) {
      if (v === undefined || v === '') delete next.filters[k];
      else next.filters[k] = v;
    }
  }
  return next;
}

/** The link that reopens the current view: the plugin page itself plus the hash. */
export function deepLink(state: UrlState, loc: Location = window.location): string {
  return `${loc.origin}${loc.pathname}${loc.search}${encodeState(state)}`;
}

/**
 * React hook: the URL state plus a setter. Navigation between views pushes a history entry
 * (so Back works); filter tweaks replace the current one.
 */
export function useUrlState(): [UrlState, (patch: StatePatch, push?: boolean) => void] {
  const [state, setState] = useState<UrlState>(() => decodeState(window.location.hash));

  useEffect(() => {
    const onHash = () => setState(decodeState(window.location.hash));
    window.addEventListener('hashchange', onHash);
    window.addEventListener('popstate', onHash);
    return () => {
      window.removeEventListener('hashchange', onHash);
      window.removeEventListener('popstate', onHash);
    };
  }, []);

  const update = useCallback((patch: StatePatch, push = false) => {
    const next = applyPatch(decodeState(window.location.hash), patch);
    const hash = encodeState(next);
    if (hash !== window.location.hash && !(hash === '' && window.location.hash === '#')) {
      const url = `${window.location.pathname}${window.location.search}${hash}`;
      if (push) window.history.pushState(null, '', url);
      else window.history.replaceState(null, '', url);
    }
    setState(next);
  }, []);

  return [state, update];
}
