// Light/dark theme: follows TensorBoard's dark mode (class "dark-mode" on the parent
// document's body, readable because the plugin iframe is same-origin) and falls back to
// prefers-color-scheme when the plugin page is opened on its own.
import { useEffect, useState } from 'react';

export type Theme = 'light' | 'dark';

export const FONT_STACK =
  'Roboto, "Segoe UI", "Helvetica Neue", Arial, "Noto Sans", "Liberation Sans", sans-serif';

function parentBody(): HTMLElement | null {
  try {
    if (window.parent && window.parent !== window) return window.parent.document.body;
  } catch {
    // Cross-origin parent: not TensorBoard's frame; ignore.
  }
  return null;
}

function mediaDark(): boolean {
  return typeof window.matchMedia === 'function' && window.matchMedia('(prefers-color-scheme: dark)').matches;
}

/** The theme to use now. Inside TensorBoard its dark-mode class decides. */
export function detectTheme(): Theme {
  const body = parentBody();
  if (body) {
    if (body.classList.contains('dark-mode')) return 'dark';
    // TensorBoard sets the class itself when following the OS; absent class means light
    // only if TensorBoard is really there (it always renders <tb-webapp>).
    if (body.ownerDocument.querySelector('tb-webapp')) return 'light';
  }
  return mediaDark() ? 'dark' : 'light';
}

let current: Theme = 'light';
const listeners = new Set<(t: Theme) => void>();
let started = false;

function update() {
  const t = detectTheme();
  if (t !== current) {
    current = t;
    document.documentElement.dataset.theme = t;
    listeners.forEach((l) => l(t));
  }
}

/** Starts watching the theme sources; idempotent. */
export function startThemeWatch(): void {
  if (started) return;
  started = true;
  current = detectTheme();
  document.documentElement.dataset.theme = current;
  if (typeof window.matchMedia === 'function') {
    window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', update);
  }
  const body = parentBody();
  if (body) new MutationObserver(update).observe(body, { attributes: true, attributeFilter: ['class'] });
}

export function useTheme(): Theme {
  const [theme, setTheme] = useState<Theme>(() => {
    startThemeWatch();
    return current;
  });
  useEffect(() => {
    listeners.add(setTheme);
    setTheme(current);
    return () => {
      listeners.delete(setTheme);
    };
  }, []);
  return theme;
}
